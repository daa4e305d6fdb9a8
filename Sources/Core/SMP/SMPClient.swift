import TetherPrimitives

/// The sans-I/O SMP client: requests in, writes out; received bytes in, matched responses out; time passed in.
///
/// Everything that decides what is sent, matched, retried or given up lives in this file:
///  1. Every request gets the next free 8-bit sequence number (wrapping; one still waiting is skipped), and the
///     response is matched by sequence, group, command and the operation's response kind. Anything else (a late
///     answer to a retried or cancelled request) is reported as unmatched and dropped.
///  2. A request is written as one SMP message, split into writes of at most `writeLimit` bytes only when the device
///     reassembles requests (Zephyr's SMP BLE transport with CONFIG_MCUMGR_TRANSPORT_BT_REASSEMBLY); otherwise a
///     request larger than one write is refused before it is sent.
///  3. A request not answered by its deadline is written again, same bytes and sequence, up to `retries` times
///     (a lost response; SMP requests this client sends are safe to repeat: upload answers with the device's
///     offset), then fails with `.timedOut`.
///  4. A lost connection fails every waiting request with `.connectionLost` and drops any partial response.
public struct SMPClient {
    public struct Configuration: Hashable, Sendable {
        public var version: SMPVersion
        /// Bytes per write: ATT MTU − 3 on BLE (a Write Without Response's header), the datagram size on UDP.
        public var writeLimit: Int
        /// Whether the device joins a request split across several writes.
        public var deviceReassembles: Bool
        public var timeout: Duration
        public var retries: Int

        public init(
            version: SMPVersion = .v2, writeLimit: Int = 20, deviceReassembles: Bool = false, timeout: Duration = .seconds(5),
            retries: Int = 2
        ) {
            self.version = version
            self.writeLimit = writeLimit
            self.deviceReassembles = deviceReassembles
            self.timeout = timeout
            self.retries = retries
        }
    }

    /// The caller's handle for one request (sequence numbers wrap; tags do not).
    public struct Tag: Hashable, Sendable, Comparable {
        public let rawValue: UInt64
        public static func < (a: Tag, b: Tag) -> Bool { a.rawValue < b.rawValue }
    }

    public enum Order: Hashable, Sendable {
        /// Write these bytes (at most `writeLimit`), in order.
        case write([UInt8])
        /// The answer to a request: the device's response (which may carry a device error) or why there is none.
        case completed(Tag, Result<SMPResponse, SMPClientError>)
        /// Bytes that were not a response (dropped); or a well-formed response no request was waiting for.
        case discarded(SMPDecodeError)
        case unmatched(SMPHeader)
    }

    struct Pending {
        var tag: Tag
        var request: SMPRequest
        var sequence: UInt8
        var message: [UInt8]
        var deadline: Timestamp
        var timeout: Duration
        var retriesLeft: Int
    }

    public var configuration: Configuration
    private var reassembler = SMPReassembler()
    private var pending: [Pending] = []
    private var nextSequence: UInt8
    private var nextTag: UInt64 = 0

    /// `firstSequence` lets a caller start anywhere (the tests start at 250 to cross the wrap).
    public init(configuration: Configuration, firstSequence: UInt8 = 0) {
        self.configuration = configuration
        self.nextSequence = firstSequence
    }

    public var waitingCount: Int { pending.count }

    /// The earliest deadline of a waiting request: call `handleTimeout(at:)` then.
    public var nextDeadline: Timestamp? { pending.map(\.deadline).min() }

    /// Encodes and writes `request`. Throws `.tooLarge` when it cannot be written to this device at all.
    public mutating func send(
        _ request: SMPRequest, at now: Timestamp, timeout: Duration? = nil, retries: Int? = nil
    ) throws(SMPClientError) -> (Tag, [Order]) {
        guard pending.count < 256 else { throw .noFreeSequence }
        while pending.contains(where: { $0.sequence == nextSequence }) { nextSequence &+= 1 }
        let sequence = nextSequence
        nextSequence &+= 1
        let message = request.encoded(version: configuration.version, sequence: sequence)
        guard message.count - SMPHeader.size <= Int(UInt16.max) else { throw .tooLarge(message.count) }
        guard configuration.deviceReassembles || message.count <= configuration.writeLimit else { throw .tooLarge(message.count) }
        let tag = Tag(rawValue: nextTag)
        nextTag += 1
        let wait = timeout ?? configuration.timeout
        pending.append(
            Pending(
                tag: tag, request: request, sequence: sequence, message: message, deadline: now.advanced(by: wait), timeout: wait,
                retriesLeft: retries ?? configuration.retries))
        return (tag, writes(message))
    }

    /// Forgets a request: its answer, if one comes, is unmatched.
    public mutating func cancel(_ tag: Tag) { pending.removeAll { $0.tag == tag } }

    public mutating func received(_ bytes: some Sequence<UInt8>, at now: Timestamp) -> [Order] {
        reassembler.append(bytes)
        var orders: [Order] = []
        while true {
            do {
                guard let message = try reassembler.next() else { break }
                let response = try SMPResponse(message: message)
                orders.append(match(response))
            } catch {
                orders.append(.discarded(error))
            }
        }
        return orders
    }

    private mutating func match(_ response: SMPResponse) -> Order {
        let header = response.header
        guard
            let index = pending.firstIndex(where: {
                $0.sequence == header.sequence && $0.request.group == header.group && $0.request.command == header.command
                    && $0.request.operation.response == header.operation
            })
        else { return .unmatched(header) }
        let entry = pending.remove(at: index)
        return .completed(entry.tag, .success(response))
    }

    /// Retries or fails every request whose deadline has passed (rule 3).
    public mutating func handleTimeout(at now: Timestamp) -> [Order] {
        var orders: [Order] = []
        var failed: [Tag] = []
        for index in pending.indices where pending[index].deadline <= now {
            if pending[index].retriesLeft > 0 {
                pending[index].retriesLeft -= 1
                pending[index].deadline = now.advanced(by: pending[index].timeout)
                orders += writes(pending[index].message)
            } else {
                failed.append(pending[index].tag)
            }
        }
        pending.removeAll { failed.contains($0.tag) }
        return orders + failed.map { .completed($0, .failure(.timedOut)) }
    }

    /// Rule 4.
    public mutating func connectionLost() -> [Order] {
        reassembler.reset()
        let lost = pending.map { Order.completed($0.tag, .failure(.connectionLost)) }
        pending.removeAll()
        return lost
    }

    /// Rule 2: one message in writes of at most `writeLimit` bytes (one write when it fits).
    private func writes(_ message: [UInt8]) -> [Order] {
        let limit = max(1, configuration.writeLimit)
        return stride(from: 0, to: message.count, by: limit).map { .write(Array(message[$0..<min($0 + limit, message.count)])) }
    }
}

/// Why a request got no response: the client's side of the story (device errors are `SMPDeviceError`).
public enum SMPClientError: Error, Hashable, Sendable {
    /// No answer after every retry.
    case timedOut
    case connectionLost
    /// The encoded request (bytes) does not fit one write and the device does not reassemble, or is over 64 KiB.
    case tooLarge(Int)
    /// 256 requests waiting: no sequence number is free.
    case noFreeSequence
}
