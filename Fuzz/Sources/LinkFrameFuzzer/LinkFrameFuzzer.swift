// libFuzzer target for the frame decoder (§3, §4) and the message layouts (§7).
//
// Input layout: byte 0 holds the number of chunk sizes in its low 4 bits (0: the whole stream in one append);
// then that many chunk sizes (1…255, 0 read as 1); the rest is the byte stream, appended in chunks of those sizes
// in turn, so libFuzzer mutates the split points as well as the bytes. After each append everything decodable is
// decoded; at the end the stalled remainder is abandoned (§3.4) and decoded again until nothing is buffered.
//
// Traps (real bugs): a decode error that discards no bytes or miscounts them (callers loop on errors), a frame
// whose payload disagrees with its header, and a message that does not survive encode → decode unchanged.

import FuzzSupport
import LinkProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    let chunkSizes = (0..<Int(input.byte() & 0x0F)).map { _ in max(1, Int(input.byte())) }
    let stream = input.rest()

    var decoder = FrameDecoder()
    var offset = stream.startIndex
    var chunk = 0
    while offset < stream.endIndex {
        let size = chunkSizes.isEmpty ? stream.count : chunkSizes[chunk % chunkSizes.count]
        let end = min(offset + size, stream.endIndex)
        let before = decoder.bufferedByteCount
        let dropped = decoder.append(stream[offset..<end])
        check(decoder.bufferedByteCount == before + (end - offset) - dropped, "append miscounted its drop")
        check(decoder.bufferedByteCount <= FrameDecoder.bufferLimit, "§3.5 buffer bound exceeded")
        decodeAll(&decoder)
        offset = end
        chunk += 1
    }
    while decoder.bufferedByteCount > 0 {
        let before = decoder.bufferedByteCount
        guard let error = decoder.abandonStalledFrame() else { fatalError("a stalled buffer of \(before) bytes gave nothing up") }
        check(error.discardedBytes > 0 && decoder.bufferedByteCount == before - error.discardedBytes, "stall discardedBytes is wrong: \(error)")
        decodeAll(&decoder)
    }
    return 0
}

/// Decodes until the decoder needs more bytes, checking every step.
func decodeAll(_ decoder: inout FrameDecoder) {
    while true {
        let before = decoder.bufferedByteCount
        do {
            guard let frame = try decoder.decode() else { return }
            check(frame.payload.count == frame.header.payloadLength, "payload length disagrees with the header")
            check(frame.header.payloadLength <= FrameHeader.maxPayloadLength, "§4: payload over 240 bytes")
            check(decoder.bufferedByteCount == before - frame.header.frameSize, "decode consumed the wrong byte count")
            checkRoundTrip(frame)
        } catch {
            check(error.discardedBytes > 0, "a decode error that discards nothing loops forever: \(error)")
            check(decoder.bufferedByteCount == before - error.discardedBytes, "discardedBytes is wrong: \(error)")
        }
    }
}

/// A message decoded from a frame, encoded again with the frame's header fields, decodes to the same message.
func checkRoundTrip(_ frame: Frame) {
    let header = frame.header
    let message: LinkMessage
    do {
        message = try LinkMessage(frame: frame)
    } catch {
        check(error.sequence == header.sequence && error.type == header.type, "message error lost its header: \(error)")
        return  // rejecting bad payloads is the decoder's job; only what it accepts must round-trip
    }
    let bytes = message.frame(version: header.version, sequence: header.sequence, flags: header.flags)
    var decoder = FrameDecoder()
    decoder.append(bytes)
    let again: Frame?
    do {
        again = try decoder.decode()
    } catch {
        fatalError("re-encoded \(message) does not decode: \(error); frame \(hex(bytes))")
    }
    guard let again, decoder.bufferedByteCount == 0 else {
        fatalError("re-encoded \(message) is not exactly one frame: \(hex(bytes))")
    }
    check(
        again.header.version == header.version && again.header.type == header.type
            && again.header.flags == header.flags && again.header.sequence == header.sequence,
        "re-encoded header differs: \(header) → \(again.header)")
    let decodedAgain: LinkMessage
    do {
        decodedAgain = try LinkMessage(frame: again)
    } catch {
        fatalError("re-encoded \(message) is rejected: \(error); original payload \(hex(frame.payload))")
    }
    check(
        decodedAgain == message,
        "round trip changed the message: \(message) → \(decodedAgain); original payload \(hex(frame.payload))")
}

func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}
