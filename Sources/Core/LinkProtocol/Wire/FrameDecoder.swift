/// Reassembles frames from the byte stream of one direction (§3).
///
/// ATT values go in with `append`; `decode()` returns the next frame, `nil` when it needs more bytes, or throws
/// a `FrameError` for bad bytes it has already stepped past, so the caller simply calls it again. The decoder
/// never allocates in steady state: it keeps one buffer with room for two maximum frames and compacts it in place.
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Every magic byte in `readIndex..<knownInvalidEnd` starts a complete candidate that an inner-frame scan already
    /// found invalid (length or CRC). Buffered bytes never change, so the verdict holds and is not computed again.
    private var knownInvalidEnd = 0

    /// §3.5: one maximum frame plus one maximum ATT value (MTU 517 − 3).
    public static let bufferLimit = FrameHeader.maxFrameSize + 514

    public init() {
        buffer.reserveCapacity(Self.bufferLimit * 2)
    }

    /// Bytes received and not yet decoded.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Appends one ATT value. Returns the number of bytes dropped because the peer overran the buffer bound
    /// (§3.5); those bytes are the oldest undecoded ones, so decoding resynchronises on what follows.
    @discardableResult
    public mutating func append(_ bytes: [UInt8]) -> Int { appendSpecialized(bytes) }

    @discardableResult
    public mutating func append<Bytes: Collection>(_ bytes: Bytes) -> Int where Bytes.Element == UInt8 { appendSpecialized(bytes) }

    @inline(__always)
    private mutating func appendSpecialized<Bytes: Collection>(_ bytes: Bytes) -> Int where Bytes.Element == UInt8 {
        compact()
        buffer.append(contentsOf: bytes)
        let excess = bufferedByteCount - Self.bufferLimit
        guard excess > 0 else { return 0 }
        readIndex += excess
        compact()
        return excess
    }

    /// Drops everything buffered, as on a disconnect (§11).
    public mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        readIndex = 0
        knownInvalidEnd = 0
    }

    /// The next complete frame, or `nil` when more bytes are needed.
    public mutating func decode() throws(FrameError) -> Frame? {
        // §3.3: find the magic byte; whatever stands before it cannot start a frame.
        let magicIndex = buffer[readIndex...].firstIndex(of: FrameHeader.magic) ?? buffer.endIndex
        if magicIndex != readIndex {
            let skipped = magicIndex - readIndex
            readIndex = magicIndex
            throw FrameError(.unsynchronized, discardedBytes: skipped, reason: "skipped \(skipped) bytes before a frame start")
        }
        guard let header = peekHeader(at: readIndex) else { return nil }
        guard header.payloadLength <= FrameHeader.maxPayloadLength else {
            readIndex += 1
            throw FrameError(
                .lengthOutOfRange, discardedBytes: 1,
                reason: "payload length \(header.payloadLength) is over \(FrameHeader.maxPayloadLength)")
        }
        guard bufferedByteCount >= header.frameSize else { return nil }
        guard readIndex >= knownInvalidEnd, crcMatches(frameAt: readIndex, header: header) else {
            throw rejectCorruptFrame(header)
        }
        let payloadStart = readIndex + FrameHeader.size
        let frame = Frame(header: header, payload: buffer[payloadStart..<(payloadStart + header.payloadLength)])
        readIndex += header.frameSize
        return frame
    }

    /// §3.4: no byte has come for the stall timeout, so no incomplete frame in the buffer will ever complete.
    /// Discards the partial frame at the front and every later incomplete candidate, keeping the buffer from the
    /// first magic byte that starts a complete frame (which `decode()` then returns or rejects). Returns what was
    /// given up, with the front frame's sequence number if its header was complete.
    public mutating func abandonStalledFrame() -> FrameError? {
        guard bufferedByteCount > 0 else { return nil }
        let start = readIndex
        let header = peekHeader(at: start)
        readIndex += 1
        while let magic = buffer[readIndex...].firstIndex(of: FrameHeader.magic) {
            readIndex = magic
            if let candidate = peekHeader(at: magic), candidate.payloadLength <= FrameHeader.maxPayloadLength,
                buffer.count - magic >= candidate.frameSize
            {
                break
            }
            readIndex += 1
        }
        if readIndex > start, buffer[readIndex...].firstIndex(of: FrameHeader.magic) == nil { readIndex = buffer.count }
        return FrameError(
            .truncated, sequence: header?.sequence, type: header?.type, discardedBytes: readIndex - start,
            reason: "partial frame stalled; \(readIndex - start) bytes given up")
    }

    // MARK: - Internals

    private func peekHeader(at start: Int) -> FrameHeader? {
        guard buffer.count - start >= FrameHeader.size else { return nil }
        return FrameHeader(
            version: buffer[start + 1],
            type: buffer[start + 2],
            flags: FrameFlags(rawValue: buffer[start + 3]),
            sequence: SequenceNumber(UInt16(buffer[start + 4]) | UInt16(buffer[start + 5]) << 8),
            payloadLength: Int(buffer[start + 6]))
    }

    private func crcMatches(frameAt start: Int, header: FrameHeader) -> Bool {
        let covered = FrameHeader.size + header.payloadLength
        let crcIndex = start + covered
        let received = UInt16(buffer[crcIndex]) | UInt16(buffer[crcIndex + 1]) << 8
        let computed = buffer.withUnsafeBytes { raw in
            CRC16.update(CRC16.initialValue, UnsafeRawBufferPointer(rebasing: raw[start..<crcIndex]))
        }
        return received == computed
    }

    /// A frame failed its CRC. If a valid frame begins inside it, the first was cut short (`truncated`) and
    /// decoding resumes at the inner frame; otherwise it is `badCRC` and decoding resumes one byte on (§3.3).
    private mutating func rejectCorruptFrame(_ header: FrameHeader) -> FrameError {
        let start = readIndex
        let end = start + header.frameSize
        var candidate = max(start + 1, knownInvalidEnd)
        var firstUndecided: Int?
        while candidate < end, let index = buffer[candidate..<end].firstIndex(of: FrameHeader.magic) {
            guard let inner = peekHeader(at: index),
                inner.payloadLength > FrameHeader.maxPayloadLength || buffer.count - index >= inner.frameSize
            else {
                firstUndecided = firstUndecided ?? index  // incomplete: may still become valid
                candidate = index + 1
                continue
            }
            if inner.payloadLength <= FrameHeader.maxPayloadLength, crcMatches(frameAt: index, header: inner) {
                readIndex = index
                return FrameError(
                    .truncated, sequence: header.sequence, type: header.type, discardedBytes: index - start,
                    reason: "frame cut short after \(index - start) of \(header.frameSize) bytes by the next frame")
            }
            candidate = index + 1
        }
        knownInvalidEnd = max(knownInvalidEnd, firstUndecided ?? end)
        readIndex += 1
        return FrameError(
            .badCRC, sequence: header.sequence, type: header.type, discardedBytes: 1,
            reason: "CRC mismatch over a \(header.frameSize)-byte frame")
    }

    private mutating func compact() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
            knownInvalidEnd = 0
        } else if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeSubrange(0..<readIndex)
            knownInvalidEnd = max(0, knownInvalidEnd - readIndex)
            readIndex = 0
        }
    }
}
