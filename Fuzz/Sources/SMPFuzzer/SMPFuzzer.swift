// libFuzzer target for the SMP codec and client core (Sources/Core/SMP): the reassembler, the header, response
// bodies in both error forms, the typed decoders, request matching and the image uploader's rules.
//
// Input layout: byte 0 holds the number of chunk sizes in its low 4 bits (0: the whole stream in one append) and,
// in bit 4, whether the device reassembles; byte 1 is the write limit (ATT MTU − 3, at least 20); then the chunk
// sizes (1…255, 0 read as 1); the rest is the byte stream of notifications from the device, delivered in chunks
// of those sizes in turn, each followed by a time-out check 1 s later.
//
// The stream goes to (a) an SMPClient with echo, parameters, image state and an upload waiting (sequences 0-3),
// whose completed responses go through every typed decoder, and (b) an ImageUploader of a 3000-byte image (its
// parameters request is sequence 0, its chunks 1, 2, …).
//
// Traps (real bugs): a write longer than the write limit; a request with more data than buf_size allows; more
// requests waiting than the window; progress beyond the image; `finished` short of the image; orders after the
// upload ended.

import CBOR
import FuzzSupport
import SMP
import TetherPrimitives

let image = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
let sha = [UInt8](repeating: 0xAB, count: 32)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    let first = input.byte()
    let reassembles = first & 0x10 != 0
    let writeLimit = max(20, Int(input.byte()))
    let chunkSizes = (0..<Int(first & 0x0F)).map { _ in max(1, Int(input.byte())) }
    let stream = input.rest()

    var now = Timestamp(nanoseconds: 0)
    let configuration = SMPClient.Configuration(version: .v2, writeLimit: writeLimit, deviceReassembles: reassembles, timeout: .seconds(2), retries: 1)
    var client = SMPClient(configuration: configuration)
    for request in [SMPRequest.echo("fuzz"), .parameters, .imageState,
                    .imageUpload(SMPUploadChunk(offset: 0, data: image[0..<8], first: .init(length: image.count, sha: sha)))] {
        _ = try? client.send(request, at: now)
    }
    var uploaderConfiguration = ImageUploader.Configuration(client: configuration)
    uploaderConfiguration.maxWindow = 4
    var uploader = ImageUploader(image: image, sha256: sha, configuration: uploaderConfiguration)
    var state = UploadWatch(writeLimit: writeLimit)
    state.check(uploader.start(at: now), uploader)

    var offset = stream.startIndex
    var chunk = 0
    while offset < stream.endIndex {
        let size = chunkSizes.isEmpty ? stream.count : chunkSizes[chunk % chunkSizes.count]
        let end = min(offset + size, stream.endIndex)
        for order in client.received(stream[offset..<end], at: now) {
            if case .completed(_, .success(let response)) = order { exercise(response) }
        }
        state.check(uploader.received(stream[offset..<end], at: now), uploader)
        now = now.advanced(by: .seconds(1))
        _ = client.handleTimeout(at: now)
        state.check(uploader.handleTimeout(at: now), uploader)
        offset = end
        chunk += 1
    }
    return 0
}

/// Every typed reading of a response body: each may refuse, none may trap.
func exercise(_ response: SMPResponse) {
    _ = try? response.deviceError()
    _ = try? SMPEchoResponse(body: response.body)
    _ = try? SMPParameters(body: response.body)
    _ = try? SMPBootloaderInfo(body: response.body)
    _ = try? SMPImageState(body: response.body)
    _ = try? SMPUploadResponse(body: response.body)
}

/// The uploader's promises, checked on every batch of orders.
struct UploadWatch {
    let writeLimit: Int
    var ended = false
    var lastProgress = 0
    var reassembly: [UInt8] = []
    var parameters: SMPParameters?

    init(writeLimit: Int) { self.writeLimit = writeLimit }

    mutating func check(_ orders: [UploadOrder], _ uploader: ImageUploader) {
        for order in orders {
            FuzzSupport.check(!ended, "an order after the upload ended: \(order)")
            switch order {
            case .write(let bytes):
                let window = max(1, min(4, (parameters?.bufferCount ?? 2) - 1))
                FuzzSupport.check(uploader.requestsWaiting <= max(window, 1), "\(uploader.requestsWaiting) requests waiting, window \(window)")
                FuzzSupport.check(bytes.count <= writeLimit && !bytes.isEmpty, "a write of \(bytes.count) bytes over the limit \(writeLimit)")
                checkRequest(bytes)
            case .parameters(let value):
                FuzzSupport.check(value.bufferSize >= 8 && value.bufferCount >= 1, "parameters out of range: \(value)")
                parameters = value
            case .progress(let progress):
                FuzzSupport.check(progress.confirmedBytes >= 0 && progress.confirmedBytes <= image.count, "progress beyond the image: \(progress)")
                lastProgress = progress.confirmedBytes
            case .finished:
                FuzzSupport.check(lastProgress == image.count, "finished at \(lastProgress) of \(image.count)")
                ended = true
            case .failed:
                ended = true
            }
        }
    }

    /// Joins the writes into requests: each whole request fits buf_size (and one write without reassembly).
    mutating func checkRequest(_ bytes: [UInt8]) {
        reassembly += bytes
        while reassembly.count >= SMPHeader.size {
            let length = Int(reassembly[2]) << 8 | Int(reassembly[3])
            guard reassembly.count >= SMPHeader.size + length else { return }
            let size = SMPHeader.size + length
            if let parameters { FuzzSupport.check(size <= parameters.bufferSize, "a request of \(size) bytes over buf_size \(parameters.bufferSize)") }
            reassembly.removeFirst(size)
        }
    }
}
