import CBOR
import Crypto
import SMP
import TetherPrimitives

/// A Zephyr-like SMP server for the tests: the image group's upload as Zephyr answers it (zephyr
/// subsys/mgmt/mcumgr/grp/img_mgmt/src/zephyr_img_mgmt.c `img_mgmt_upload_inspect` and img_mgmt.c
/// `img_mgmt_upload`: a wrong offset is answered with the offset it expects; offset 0 with the `sha` of the upload in
/// progress resumes it; offset 0 with another `sha` erases the slot first; a first chunk shorter than the 32-byte
/// image header is refused), `buf_size`/`buf_count` enforced (an oversize request, or one more than
/// its free buffers, is dropped, as a device out of net_bufs does), requests split across writes joined only when
/// `reassembles`, answers split into notifications of at most `writeLimit` bytes.
struct SMPDeviceModel {
    struct Configuration {
        var bufferSize = 384
        var bufferCount = 4
        var reassembles = false
        var writeLimit = 20
        var supportsParameters = true
        var version = SMPVersion.v2
        var eraseDelay: Duration = .seconds(35)
        var chunkTime: Duration = .milliseconds(2)
        var checksHash = true
    }

    struct Upload {
        var sha: [UInt8]
        var length: Int
        var received: [UInt8]
    }

    var configuration: Configuration
    var upload: Upload?
    /// Observations the tests assert on.
    var droppedOversize = 0
    var droppedNoBuffer = 0
    var droppedFragment = 0
    var offsetZeroRequests = 0
    var erases = 0
    var dataBytesWritten = 0
    var maxPending = 0
    var maxRequestSize = 0
    /// Upload requests answered with the device's own, different offset (lost or reordered chunks).
    var wrongOffsets = 0
    private var reassembler = SMPReassembler(acceptsResponses: false)
    /// When each accepted request finishes processing (the device handles one at a time).
    private var completions: [Timestamp] = []
    private var busyUntil = Timestamp(nanoseconds: 0)

    init(configuration: Configuration) {
        self.configuration = configuration
        reassembler = SMPReassembler(maxMessageSize: configuration.bufferSize, acceptsResponses: false)
    }

    /// A write arrives at `now`; returns the notifications to send back, each with the time it leaves the device.
    mutating func write(_ bytes: [UInt8], at now: Timestamp) -> [(Timestamp, [[UInt8]])] {
        var messages: [[UInt8]] = []
        if configuration.reassembles {
            reassembler.append(bytes)
            while true {
                do {
                    guard let message = try reassembler.next() else { break }
                    messages.append(message)
                } catch {
                    droppedOversize += 1  // over buf_size (or garbage): the reassembler dropped it
                    break
                }
            }
        } else {
            // Without reassembly each write must be one whole message (Zephyr's BT transport reads it as one).
            guard let header = try? SMPHeader(bytes), bytes.count == SMPHeader.size + Int(header.length) else {
                droppedFragment += 1
                return []
            }
            messages.append(bytes)
        }
        return messages.compactMap { process($0, at: now) }
    }

    /// Lost connection: partial requests and queued answers are gone; the upload state stays (it is in RAM and
    /// the device did not reset).
    mutating func disconnect(at now: Timestamp) {
        reassembler.reset()
        completions.removeAll()
        busyUntil = now
    }

    private mutating func process(_ message: [UInt8], at now: Timestamp) -> (Timestamp, [[UInt8]])? {
        maxRequestSize = max(maxRequestSize, message.count)
        guard message.count <= configuration.bufferSize else {
            droppedOversize += 1
            return nil
        }
        completions.removeAll { $0 <= now }
        // One buffer is the answer's: at most buf_count − 1 requests wait at once.
        guard completions.count < max(1, configuration.bufferCount - 1) else {
            droppedNoBuffer += 1
            return nil
        }
        guard let header = try? SMPHeader(message), let body = try? CBORDecoder().decode(message[SMPHeader.size...]) else { return nil }
        var work = configuration.chunkTime
        let answer = answer(header, body, work: &work)
        let done = max(now, busyUntil).advanced(by: work)
        busyUntil = done
        completions.append(done)
        maxPending = max(maxPending, completions.count)
        let bodyBytes = CBORValue.map(answer).encoded
        let response = SMPHeader(
            version: header.version, operation: header.operation.response, length: UInt16(bodyBytes.count), group: header.group,
            sequence: header.sequence, command: header.command).encoded + bodyBytes
        let limit = configuration.writeLimit
        let notifications = stride(from: 0, to: response.count, by: limit).map { Array(response[$0..<min($0 + limit, response.count)]) }
        return (done, notifications)
    }

    private func error(group: UInt16, rc: UInt64, legacy: UInt64) -> [CBORPair] {
        configuration.version == .v2
            ? [CBORPair(.text("err"), .textMap(["group": .unsigned(UInt64(group)), "rc": .unsigned(rc)]))]
            : [CBORPair(.text("rc"), .unsigned(legacy))]
    }

    private mutating func answer(_ header: SMPHeader, _ body: CBORValue, work: inout Duration) -> [CBORPair] {
        switch (header.group, header.command) {
        case (SMPGroup.os, SMPOSCommand.parameters):
            guard configuration.supportsParameters else { return [CBORPair(.text("rc"), .unsigned(8))] }
            return [CBORPair(.text("buf_size"), .unsigned(UInt64(configuration.bufferSize))),
                    CBORPair(.text("buf_count"), .unsigned(UInt64(configuration.bufferCount)))]
        case (SMPGroup.image, SMPImageCommand.upload):
            return uploadAnswer(body, work: &work)
        default:
            return [CBORPair(.text("rc"), .unsigned(8))]
        }
    }

    private mutating func uploadAnswer(_ body: CBORValue, work: inout Duration) -> [CBORPair] {
        guard let offsetValue = body["off"]?.unsignedValue, let data = body["data"]?.bytesValue else {
            return error(group: 1, rc: 1, legacy: 3)
        }
        let offset = Int(offsetValue)
        if offset == 0 {
            offsetZeroRequests += 1
            // zephyr_img_mgmt.c, img_mgmt_upload_inspect: the first chunk holds at least the image header.
            guard data.count >= 32 else { return error(group: 1, rc: 22, legacy: 3) }
            guard let length = body["len"]?.unsignedValue else { return error(group: 1, rc: 21, legacy: 3) }
            let sha = body["sha"]?.bytesValue ?? []
            if let upload, !sha.isEmpty, upload.sha == sha, !upload.received.isEmpty {
                // Same upload: answer where it stands (resume).
                return [CBORPair(.text("off"), .unsigned(UInt64(upload.received.count)))]
            }
            erases += 1
            work += configuration.eraseDelay
            upload = Upload(sha: sha, length: Int(length), received: [])
        }
        guard var current = upload else { return error(group: 1, rc: 3, legacy: 3) }
        guard offset == current.received.count else {
            wrongOffsets += 1
            return [CBORPair(.text("off"), .unsigned(UInt64(current.received.count)))]
        }
        guard offset + data.count <= current.length else { return error(group: 1, rc: 31, legacy: 3) }
        current.received += data
        dataBytesWritten += data.count
        upload = current
        var answer = [CBORPair(.text("off"), .unsigned(UInt64(current.received.count)))]
        if current.received.count == current.length, configuration.checksHash {
            answer.append(CBORPair(.text("match"), .bool(Array(SHA256.hash(data: current.received)) == current.sha)))
        }
        return answer
    }
}
