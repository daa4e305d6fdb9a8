import TetherPrimitives

/// Uploads one image through SMP's image upload command, sans-I/O: facts in (`start`, `received`, `handleTimeout`,
/// `connectionLost`, `connected`), orders out (`UploadOrder`), time passed in. It takes the image bytes and their
/// SHA-256 (verifying the image is MCUbootImage's job, before this starts).
///
/// Everything that decides what is sent next lives in this file:
///  1. It first reads the device's parameters (`buf_size`, `buf_count`). A device that does not know the command
///     (MGMT_ERR_ENOTSUP, or group error) gets `fallbackParameters`.
///  2. Every request fits `buf_size` whole; it also fits one write unless the device reassembles (then the client
///     splits it into writes of the MTU's size). With more than one request in flight, a request is sized to a whole
///     number of writes when `buf_size` holds more than one: the link is kept busy, so a request one remnant longer
///     would only send that remnant in a write of its own, and links count packets per connection event, not bytes
///     (Core v5.3 Vol 6 Part B §4.5.1; at MTU 498 a 2,048-byte request took five writes for four writes' worth).
///     With one in flight each request waits for its answer, and fewer, fuller requests win. `requestBudget`.
///  3. Up to `buf_count − 1` requests are in flight (one of the device's buffers stays free for its own answer,
///     as nRF Connect Device Manager and smpclient do), capped by `maxWindow`; only one until the first chunk
///     (offset 0) is answered, with `firstChunkTimeout`: the device erases its slot before it answers.
///  4. The device's answered `off` is the truth: it acknowledges every chunk ending at or before it. An answer
///     other than the end of its own chunk (a lost or reordered request: Zephyr answers a wrong offset with the
///     offset it expects) cancels every other request in flight and continues from that offset.
///  5. Offset 0 always carries `len` and `sha`. After a disconnect the upload starts again at offset 0 with the
///     same `sha`: a device still holding that upload answers its offset (resume); one that lost it takes the
///     chunk and the upload starts over. So the client never resumes at a stale offset of its own (zephyr #51798).
///  6. A request unanswered after the client's retries fails the upload (`deviceStoppedAnswering`); a device error
///     fails it with that error; `match: false` on the last answer fails it (`hashMismatch`).
public struct ImageUploader {
    public struct Configuration: Hashable, Sendable {
        public var client: SMPClient.Configuration
        public var image: UInt32
        /// Sent as `upgrade` in the first chunk when set.
        public var upgradeOnly: Bool?
        public var firstChunkTimeout: Duration
        public var maxWindow: Int
        /// Used when the device does not answer the parameters command.
        public var fallbackParameters: SMPParameters

        public init(
            client: SMPClient.Configuration = SMPClient.Configuration(), image: UInt32 = 0, upgradeOnly: Bool? = nil,
            firstChunkTimeout: Duration = .seconds(40), maxWindow: Int = 8,
            fallbackParameters: SMPParameters = SMPParameters(bufferSize: 384, bufferCount: 1)
        ) {
            self.client = client
            self.image = image
            self.upgradeOnly = upgradeOnly
            self.firstChunkTimeout = firstChunkTimeout
            self.maxWindow = maxWindow
            self.fallbackParameters = fallbackParameters
        }
    }

    /// One request in flight.
    struct InFlight: Hashable {
        var tag: SMPClient.Tag
        var offset: Int
        var length: Int
        var end: Int { offset + length }
    }

    /// What the uploader is doing, with the data of that phase.
    enum Phase {
        /// Not started, or disconnected: waiting for `start` or `connected`.
        case waiting
        case readingParameters(SMPClient.Tag)
        case uploading(parameters: SMPParameters, nextOffset: Int, inFlight: [InFlight], firstAnswered: Bool)
        case finished
        case failed(UploadFailure)
    }

    public let image: [UInt8]
    public let sha256: [UInt8]
    public private(set) var configuration: Configuration
    private var client: SMPClient
    private var phase: Phase = .waiting
    /// The device's last answered offset (what progress reports).
    public private(set) var confirmedOffset = 0
    private var started = false

    public init(image: [UInt8], sha256: [UInt8], configuration: Configuration, firstSequence: UInt8 = 0) {
        self.image = image
        self.sha256 = sha256
        self.configuration = configuration
        self.client = SMPClient(configuration: configuration.client, firstSequence: firstSequence)
    }

    public var nextDeadline: Timestamp? { client.nextDeadline }

    /// Requests written and not yet answered, cancelled or given up (rule 3 keeps it within the window).
    public var requestsWaiting: Int { client.waitingCount }

    public var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    public var failure: UploadFailure? {
        if case .failed(let failure) = phase { return failure }
        return nil
    }

    /// The first connection is up: read the parameters and begin.
    public mutating func start(at now: Timestamp) -> [UploadOrder] {
        guard case .waiting = phase, !started else { return [] }
        started = true
        // An empty image would leave nothing to send and nothing to wait for.
        guard !image.isEmpty else { return fail(.emptyImage) }
        return readParameters(at: now)
    }

    /// A new connection after `connectionLost`, with its write limit (ATT MTU − 3): begin again at rule 5.
    public mutating func connected(writeLimit: Int, at now: Timestamp) -> [UploadOrder] {
        guard case .waiting = phase, started else { return [] }
        configuration.client.writeLimit = writeLimit
        client.configuration.writeLimit = writeLimit
        return readParameters(at: now)
    }

    public mutating func connectionLost(at now: Timestamp) -> [UploadOrder] {
        _ = client.connectionLost()  // every waiting request is abandoned with the connection
        switch phase {
        case .readingParameters, .uploading: phase = .waiting
        case .waiting, .finished, .failed: break
        }
        return []
    }

    public mutating func received(_ bytes: some Sequence<UInt8>, at now: Timestamp) -> [UploadOrder] {
        handle(client.received(bytes, at: now), at: now)
    }

    public mutating func handleTimeout(at now: Timestamp) -> [UploadOrder] {
        handle(client.handleTimeout(at: now), at: now)
    }

    // MARK: - Rules

    private mutating func readParameters(at now: Timestamp) -> [UploadOrder] {
        do {
            let (tag, orders) = try client.send(.parameters, at: now)
            phase = .readingParameters(tag)
            return writes(orders)
        } catch {
            return fail(.request(error))
        }
    }

    private mutating func handle(_ orders: [SMPClient.Order], at now: Timestamp) -> [UploadOrder] {
        var out: [UploadOrder] = []
        for order in orders {
            switch order {
            case .write(let bytes): out.append(.write(bytes))
            case .discarded, .unmatched: break  // late answers to cancelled or retried requests; garbage times out
            case .completed(let tag, let result): out += completed(tag, result, at: now)
            }
        }
        return out
    }

    private mutating func completed(_ tag: SMPClient.Tag, _ result: Result<SMPResponse, SMPClientError>, at now: Timestamp) -> [UploadOrder] {
        switch phase {
        case .readingParameters(let waiting) where waiting == tag:
            return parametersAnswered(result, at: now)
        case .uploading(let parameters, let nextOffset, let inFlight, let firstAnswered):
            guard let chunk = inFlight.first(where: { $0.tag == tag }) else { return [] }
            let response: SMPResponse
            switch result {
            case .failure(.timedOut): return fail(.deviceStoppedAnswering(offset: chunk.offset))
            case .failure(let error): return fail(.request(error))
            case .success(let value): response = value
            }
            let answer: SMPUploadResponse
            do {
                if let error = try response.deviceError() { return fail(.device(error)) }
                answer = try SMPUploadResponse(body: response.body)
            } catch {
                return fail(.malformedResponse(error))
            }
            return uploadAnswered(
                chunk, answer, parameters: parameters, nextOffset: nextOffset, inFlight: inFlight, firstAnswered: firstAnswered,
                at: now)
        case .readingParameters, .waiting, .finished, .failed:
            return []
        }
    }

    /// Rule 1.
    private mutating func parametersAnswered(_ result: Result<SMPResponse, SMPClientError>, at now: Timestamp) -> [UploadOrder] {
        var parameters = configuration.fallbackParameters
        switch result {
        case .failure(.timedOut): return fail(.deviceStoppedAnswering(offset: confirmedOffset))
        case .failure(let error): return fail(.request(error))
        case .success(let response):
            do {
                if try response.deviceError() == nil { parameters = try SMPParameters(body: response.body) }
            } catch {
                return fail(.malformedResponse(error))
            }
        }
        phase = .uploading(parameters: parameters, nextOffset: 0, inFlight: [], firstAnswered: false)
        return [.parameters(parameters)] + fillWindow(at: now)
    }

    /// Rules 4 and 6.
    private mutating func uploadAnswered(
        _ chunk: InFlight, _ answer: SMPUploadResponse, parameters: SMPParameters, nextOffset: Int, inFlight: [InFlight],
        firstAnswered: Bool, at now: Timestamp
    ) -> [UploadOrder] {
        let deviceOffset = answer.offset
        guard deviceOffset <= image.count else { return fail(.deviceOffsetBeyondImage(deviceOffset)) }
        confirmedOffset = deviceOffset
        var remaining = inFlight.filter { $0.tag != chunk.tag }
        var next = nextOffset
        if deviceOffset == chunk.end {
            // Acknowledged, and so is every chunk that ends at or before it (their answers were lost).
            for acknowledged in remaining where acknowledged.end <= deviceOffset { client.cancel(acknowledged.tag) }
            remaining.removeAll { $0.end <= deviceOffset }
        } else {
            // The device wants another offset: everything else in flight was sent for the wrong one.
            for other in remaining { client.cancel(other.tag) }
            remaining = []
            next = deviceOffset
        }
        var orders: [UploadOrder] = [.progress(UploadProgress(confirmedBytes: deviceOffset, totalBytes: image.count))]
        if deviceOffset == image.count, remaining.isEmpty {
            if answer.match == false { return orders + fail(.hashMismatch) }
            phase = .finished
            return orders + [.finished]
        }
        phase = .uploading(parameters: parameters, nextOffset: next, inFlight: remaining, firstAnswered: firstAnswered || chunk.offset == 0)
        orders += fillWindow(at: now)
        return orders
    }

    /// Rules 2, 3 and 5: send chunks while the window has room.
    private mutating func fillWindow(at now: Timestamp) -> [UploadOrder] {
        guard case .uploading(let parameters, var next, var inFlight, let firstAnswered) = phase else { return [] }
        let allowed = max(1, min(configuration.maxWindow, parameters.bufferCount - 1))
        let window = firstAnswered ? allowed : 1
        let clientConfiguration = client.configuration
        let budget = Self.requestBudget(
            bufferSize: parameters.bufferSize, writeLimit: clientConfiguration.writeLimit, reassembles: clientConfiguration.deviceReassembles,
            window: allowed)
        var orders: [UploadOrder] = []
        while inFlight.count < window, next < image.count {
            let first = next == 0
                ? SMPUploadChunk.FirstChunkFields(
                    image: configuration.image, length: image.count, sha: sha256, upgrade: configuration.upgradeOnly) : nil
            // Zephyr refuses a first chunk shorter than the MCUboot image header (zephyr_img_mgmt.c,
            // img_mgmt_upload_inspect: "Image header is the first thing in the image").
            let least = next == 0 ? min(UploadChunking.firstChunkMinimum, image.count) : 1
            guard let length = UploadChunking.dataLength(offset: next, remaining: image.count - next, first: first, budget: budget),
                length >= least
            else { return orders + fail(.bufferTooSmall(budget)) }
            let chunk = SMPUploadChunk(offset: next, data: image[next..<(next + length)], first: first)
            do {
                let timeout = next == 0 ? configuration.firstChunkTimeout : nil
                let (tag, sent) = try client.send(.imageUpload(chunk), at: now, timeout: timeout)
                inFlight.append(InFlight(tag: tag, offset: next, length: length))
                orders += writes(sent)
            } catch {
                return orders + fail(.request(error))
            }
            next += length
        }
        phase = .uploading(parameters: parameters, nextOffset: next, inFlight: inFlight, firstAnswered: firstAnswered)
        return orders
    }

    /// Rule 2: the largest encoded request. Without reassembly, one write within `buf_size`; with it, `buf_size`,
    /// cut down to whole writes when more than one request may be in flight (`window`) and it holds more than one
    /// write (never below one write).
    public static func requestBudget(bufferSize: Int, writeLimit: Int, reassembles: Bool, window: Int) -> Int {
        guard reassembles else { return min(bufferSize, writeLimit) }
        guard window > 1, writeLimit > 0, bufferSize > writeLimit else { return bufferSize }
        return bufferSize - bufferSize % writeLimit
    }

    private mutating func fail(_ failure: UploadFailure) -> [UploadOrder] {
        _ = client.connectionLost()  // nothing more is waited for
        phase = .failed(failure)
        return [.failed(failure)]
    }

    private func writes(_ orders: [SMPClient.Order]) -> [UploadOrder] {
        orders.compactMap { if case .write(let bytes) = $0 { .write(bytes) } else { nil } }
    }
}

public enum UploadOrder: Hashable, Sendable {
    /// Write these bytes to the device (at most the write limit).
    case write([UInt8])
    /// The parameters the upload uses (answered or fallback).
    case parameters(SMPParameters)
    case progress(UploadProgress)
    /// The device has the whole image (and said its hash matched, if it checked).
    case finished
    case failed(UploadFailure)
}

public struct UploadProgress: Hashable, Sendable {
    public var confirmedBytes: Int
    public var totalBytes: Int

    public init(confirmedBytes: Int, totalBytes: Int) {
        self.confirmedBytes = confirmedBytes
        self.totalBytes = totalBytes
    }
}

public enum UploadFailure: Error, Hashable, Sendable {
    /// A request got no answer after every retry; `offset` is the chunk's (or the last confirmed offset).
    case deviceStoppedAnswering(offset: Int)
    case device(SMPDeviceError)
    case malformedResponse(SMPDecodeError)
    case request(SMPClientError)
    /// The device answered an offset past the image's end.
    case deviceOffsetBeyondImage(Int)
    /// The device's hash of what it received differs from `sha` (`match: false`).
    case hashMismatch
    /// There is nothing to upload.
    case emptyImage
    /// Not one byte of data (or, for the first chunk, not the 32-byte image header) fits a request within this budget
    /// (buf_size, or the write limit where the device does not reassemble).
    case bufferTooSmall(Int)
}
