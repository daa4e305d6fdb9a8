import SMP
import Testing
import TetherPrimitives

/// The uploader against the device model (UploadPair): every configuration completes with the device holding the
/// exact image, within the device's limits, and the rules of ImageUploader.swift hold.
struct ImageUploaderTests {
    static func image(_ count: Int, seed: UInt64 = 7) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var mtu: Int
        var reassembles: Bool
        var bufferCount: Int
        var bufferSize = 1024
        var testDescription: String { "MTU \(mtu), reassembly \(reassembles), buf_count \(bufferCount)" }
    }

    static let cases: [Case] = [23, 247, 498].flatMap { mtu in
        [false, true].flatMap { reassembles in [2, 5].map { Case(mtu: mtu, reassembles: reassembles, bufferCount: $0) } }
    }

    /// Rules 2 and 3: window 1 (buf_count 2) and 4 (buf_count 5), MTU 23/247/498, reassembly on and off.
    @Test(arguments: cases.filter { $0.mtu > 23 || $0.reassembles })
    func uploadsWithinTheDevicesLimits(_ example: Case) {
        let image = Self.image(20_000)
        var device = SMPDeviceModel.Configuration()
        device.reassembles = example.reassembles
        device.bufferCount = example.bufferCount
        device.bufferSize = example.bufferSize
        var pair = UploadPair(image: image, device: device, link: .init(mtu: example.mtu))
        pair.run()
        #expect(pair.finished && pair.failure == nil)
        #expect(pair.device.upload?.received == image)
        #expect(pair.device.droppedOversize == 0 && pair.device.droppedNoBuffer == 0 && pair.device.droppedFragment == 0)
        #expect(pair.device.maxPending == example.bufferCount - 1 && pair.maxWaiting == example.bufferCount - 1, "window = buf_count − 1")
        #expect(pair.writes.allSatisfy { $0.count <= example.mtu - 3 }, "every write fits the MTU")
        // Requests fill their budget: with reassembly buf_size, cut to whole writes when a window lets several be in
        // flight (1024 at MTU 247 is 4 × 244 = 976; at MTU 498, 2 × 495 = 990); one write without.
        let write = example.mtu - 3
        let windowed = example.bufferCount > 2
        let budget = example.reassembles
            ? (windowed && example.bufferSize > write ? example.bufferSize / write * write : example.bufferSize) : min(example.bufferSize, write)
        #expect(pair.device.maxRequestSize <= budget && pair.device.maxRequestSize >= budget - 2, "largest request \(pair.device.maxRequestSize), budget \(budget)")
        if example.reassembles {
            #expect(pair.device.maxRequestSize > example.bufferSize - write - 2, "no whole write of room left unused")
        }
        #expect(pair.device.dataBytesWritten == image.count, "no byte written twice")
        #expect(pair.progress.last == image.count && pair.progress == pair.progress.sorted())
    }

    /// At MTU 23 without reassembly not even the first chunk's fields and the 32-byte image header fit one write
    /// (20 bytes): the upload is refused before anything is uploaded.
    @Test func mtu23WithoutReassemblyIsRefused() {
        var pair = UploadPair(image: Self.image(1_000), device: .init(), link: .init(mtu: 23))
        pair.run()
        #expect(pair.failure == .bufferTooSmall(20) && pair.device.offsetZeroRequests == 0)
    }

    /// Rule 3: the first chunk waits out the slot erase (35 s here) with its long time-out, alone.
    @Test func firstChunkWaitsForTheErase() {
        let image = Self.image(5_000)
        var pair = UploadPair(image: image, device: .init(), link: .init())
        pair.run()
        #expect(pair.finished)
        #expect(pair.device.offsetZeroRequests == 1 && pair.device.erases == 1, "the first chunk is sent once")
        // With the ordinary time-out instead, the chunk is written again while the device erases.
        var short = ImageUploader.Configuration()
        short.firstChunkTimeout = .seconds(5)
        short.client.retries = 10
        var impatient = UploadPair(image: image, device: .init(), link: .init(), uploader: short)
        impatient.run()
        #expect(impatient.device.offsetZeroRequests > 1)
    }

    /// Rule 1: a device without the parameters command gets the fallback (window 1, 384-byte requests).
    @Test func deviceWithoutParametersGetsTheFallback() {
        var device = SMPDeviceModel.Configuration()
        device.supportsParameters = false
        device.reassembles = true
        var pair = UploadPair(image: Self.image(6_000), device: device, link: .init(mtu: 498))
        pair.run()
        #expect(pair.finished && pair.parameters == [SMPParameters(bufferSize: 384, bufferCount: 1)])
        #expect(pair.device.maxPending == 1 && pair.device.maxRequestSize <= 384)
    }

    /// Rules 3, 4 and 6 under loss of requests and answers: window 1 and 4, the answers' offsets lead the way back.
    @Test(arguments: [(2, UInt64(1)), (2, 2), (5, 3), (5, 4), (5, 5)])
    func lossIsRecovered(bufferCount: Int, seed: UInt64) {
        let image = Self.image(30_000)
        var device = SMPDeviceModel.Configuration()
        device.bufferCount = bufferCount
        device.eraseDelay = .seconds(1)
        var configuration = ImageUploader.Configuration()
        configuration.client.retries = 8
        var pair = UploadPair(image: image, device: device, link: .init(mtu: 247, loss: 0.05), uploader: configuration, seed: seed)
        pair.run()
        let (finished, failure) = (pair.finished, pair.failure)
        #expect(finished, "\(String(describing: failure))")
        #expect(pair.device.upload?.received == image)
        #expect(pair.device.dataBytesWritten == image.count)
        #expect(bufferCount == 2 || pair.device.wrongOffsets > 0, "a lost chunk in a window makes the next ones wrong")
        #expect(pair.maxWaiting <= bufferCount - 1, "requests sent for a wrong offset are cancelled, not left waiting")
    }

    /// Rule 4 with reordering (UDP-like: one whole request per datagram, jitter lets datagrams overtake each other):
    /// chunks that arrive early are answered with the device's offset and sent again; the image arrives exactly.
    @Test(arguments: [UInt64(11), 12, 13])
    func reorderingIsRecovered(seed: UInt64) {
        let image = Self.image(30_000)
        var device = SMPDeviceModel.Configuration()
        device.bufferCount = 5
        device.bufferSize = 1024
        device.eraseDelay = .seconds(1)
        var configuration = ImageUploader.Configuration()
        configuration.client.retries = 8
        var pair = UploadPair(
            image: image, device: device, link: .init(mtu: 1027, jitter: .milliseconds(30)), uploader: configuration, seed: seed)
        pair.run()
        let (finished, failure) = (pair.finished, pair.failure)
        #expect(finished, "\(String(describing: failure))")
        #expect(pair.device.upload?.received == image)
        #expect(pair.device.dataBytesWritten == image.count)
        #expect(pair.device.wrongOffsets > 0, "the jitter reordered chunks")
        #expect(pair.maxWaiting <= 4, "requests sent for a wrong offset are cancelled, not left waiting")
    }

    /// Rule 5: a disconnect at every event of a clean run (parameters, erase, first chunk, window, last chunk);
    /// after reconnecting, the upload resumes from the device's offset (nothing written twice) and completes.
    @Test(arguments: [(2, true, 23), (5, false, 247), (5, true, 498)])
    func disconnectAtEveryPhaseResumes(bufferCount: Int, reassembles: Bool, mtu: Int) {
        let image = Self.image(3_000)
        var device = SMPDeviceModel.Configuration()
        device.bufferCount = bufferCount
        device.reassembles = reassembles
        device.bufferSize = 512
        device.eraseDelay = .seconds(2)
        var clean = UploadPair(image: image, device: device, link: .init(mtu: mtu))
        clean.run()
        #expect(clean.finished)
        for event in 1...clean.events {
            var pair = UploadPair(image: image, device: device, link: .init(mtu: mtu))
            pair.disconnectAtEvents = [event]
            pair.run()
            let (finished, failure, disconnects) = (pair.finished, pair.failure, pair.disconnects)
            #expect(finished && disconnects == 1, "disconnect at event \(event): \(String(describing: failure))")
            #expect(pair.device.upload?.received == image, "event \(event)")
            #expect(pair.device.erases == 1, "event \(event): the resumed upload must not erase again")
            #expect(pair.device.dataBytesWritten == image.count, "event \(event): resumed, not restarted")
        }
    }

    /// Rule 6: a device that stops answering fails the upload after the retries, naming the chunk.
    @Test func deviceThatStopsAnsweringFails() {
        var pair = UploadPair(image: Self.image(4_000), device: .init(), link: .init(mtu: 247, loss: 1.0))
        pair.run()
        #expect(pair.failure == .deviceStoppedAnswering(offset: 0) && !pair.finished)
    }

    @Test func emptyImageIsRefused() {
        var uploader = ImageUploader(image: [], sha256: [], configuration: .init())
        #expect(uploader.start(at: Timestamp(nanoseconds: 0)) == [.failed(.emptyImage)])
    }

    /// Rule 6: `match: false` on the last answer fails the upload.
    @Test func hashMismatchFails() {
        let image = Self.image(2_000)
        var uploader = ImageUploader(
            image: image, sha256: Array(repeating: 0, count: 32), configuration: .init(client: .init(writeLimit: 244)))
        var device = SMPDeviceModel(configuration: .init())
        var now = Timestamp(nanoseconds: 0)
        var outcome: UploadOrder?
        var pending = uploader.start(at: now)
        while outcome == nil, !pending.isEmpty {
            var next: [UploadOrder] = []
            for order in pending {
                switch order {
                case .write(let bytes):
                    for (at, notifications) in device.write(bytes, at: now) {
                        now = max(now, at)
                        for notification in notifications { next += uploader.received(notification, at: now) }
                    }
                case .failed, .finished: outcome = order
                case .progress, .parameters: break
                }
            }
            pending = next
        }
        #expect(outcome == .failed(.hashMismatch))
    }

    /// Rule 2's budget: one write without reassembly; with it and a window, buf_size cut to whole writes (2,048 at MTU
    /// 247 → 8 × 244; at MTU 498 → 4 × 495; 384 at MTU 498 stays 384); with one request in flight, buf_size.
    @Test func requestBudgetIsWholeWritesWhenWindowed() {
        #expect(ImageUploader.requestBudget(bufferSize: 2048, writeLimit: 244, reassembles: true, window: 3) == 1952)
        #expect(ImageUploader.requestBudget(bufferSize: 2048, writeLimit: 495, reassembles: true, window: 3) == 1980)
        #expect(ImageUploader.requestBudget(bufferSize: 384, writeLimit: 495, reassembles: true, window: 3) == 384)
        #expect(ImageUploader.requestBudget(bufferSize: 1464, writeLimit: 244, reassembles: true, window: 3) == 1464, "already whole")
        #expect(ImageUploader.requestBudget(bufferSize: 2048, writeLimit: 495, reassembles: true, window: 1) == 2048)
        #expect(ImageUploader.requestBudget(bufferSize: 2048, writeLimit: 244, reassembles: false, window: 3) == 244)
        #expect(ImageUploader.requestBudget(bufferSize: 128, writeLimit: 244, reassembles: false, window: 1) == 128)
    }

    /// Chunk sizing: the largest data that keeps the whole request within the budget, at every head-size boundary.
    @Test func chunkSizingIsExact() {
        let first = SMPUploadChunk.FirstChunkFields(length: 100_000, sha: Array(repeating: 1, count: 32))
        for budget in 60...600 {
            for (offset, firstFields) in [(0, Optional(first)), (23, nil), (24, nil), (65_536, nil)] {
                guard let length = UploadChunking.dataLength(offset: offset, remaining: 100_000, first: firstFields, budget: budget) else {
                    continue
                }
                let size = SMPRequest.imageUpload(SMPUploadChunk(offset: offset, data: Array(repeating: 0, count: length)[...], first: firstFields)).encodedSize
                let bigger = SMPRequest.imageUpload(SMPUploadChunk(offset: offset, data: Array(repeating: 0, count: length + 1)[...], first: firstFields)).encodedSize
                #expect(size <= budget && bigger > budget, "budget \(budget) offset \(offset): \(length) bytes → \(size)")
            }
        }
        #expect(UploadChunking.dataLength(offset: 0, remaining: 10, first: first, budget: 20) == nil)
        #expect(UploadChunking.dataLength(offset: 5, remaining: 3, first: nil, budget: 200) == 3)
    }
}
