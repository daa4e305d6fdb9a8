import SMP
import TetherPrimitives

/// The SMP client core on a UDP socket, as Zephyr's UDP transport expects it (subsys/mgmt/mcumgr/transport/src/
/// smp_udp.c: one SMP message per datagram, no reassembly): the I/O edge of SMPClient. It reads the monotonic clock,
/// writes the core's datagrams, feeds it what arrives and calls its time-outs; the core decides everything else
/// (sequence matching, retries of a request whose answer was lost, giving up).
///
/// Blocking: a caller on Swift's concurrency pool runs it on a thread of its own.
public final class SMPUDPSession {
    /// IPv4's largest datagram without fragmentation on an Ethernet link (1500 − 20 − 8, RFC 8085 §3.2); the
    /// device's buf_size usually caps requests lower.
    public static let defaultDatagramLimit = 1472

    private let socket: UDPSocket
    private var client: SMPClient
    private let start = ContinuousClock.now

    public init(host: String, port: UInt16, configuration: SMPClient.Configuration) throws(FirmwareUDPError) {
        do {
            socket = try UDPSocket(connectTo: host, port: port)
        } catch {
            throw .transport(error.description)
        }
        client = SMPClient(configuration: configuration)
    }

    /// The default configuration over UDP: SMP v2, one request per datagram, 3 s before a request is sent again,
    /// 3 retries (UDP loses datagrams; each request this client sends is safe to repeat).
    public static func configuration(version: SMPVersion = .v2) -> SMPClient.Configuration {
        SMPClient.Configuration(version: version, writeLimit: defaultDatagramLimit, deviceReassembles: false, timeout: .seconds(3), retries: 3)
    }

    public var now: Timestamp {
        let elapsed = start.duration(to: ContinuousClock.now)
        return Timestamp(nanoseconds: elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
    }

    public var configuration: SMPClient.Configuration { client.configuration }

    /// Sends `request` and waits for its answer (retrying as the core orders). The answer may carry a device error.
    public func perform(_ request: SMPRequest, timeout: Duration? = nil) throws(FirmwareUDPError) -> SMPResponse {
        let (tag, orders) = try sendOrThrow(request, timeout: timeout)
        try write(orders)
        while true {
            for order in try waitForOrders() {
                switch order {
                case .write(let bytes): try write(bytes)
                case .completed(tag, .success(let response)): return response
                case .completed(tag, .failure(let error)): throw .client(error)
                case .completed, .discarded, .unmatched: continue
                }
            }
        }
    }

    /// Drives an ImageUploader to its end, reporting each order it gives to `observe` (progress, parameters).
    public func drive(_ uploader: inout ImageUploader, observe: (UploadOrder) -> Void) throws(FirmwareUDPError) {
        var orders = uploader.start(at: now)
        while true {
            for order in orders {
                switch order {
                case .write(let bytes): try write(bytes)
                case .finished: observe(order); return
                case .failed(let failure): throw .upload(failure)
                case .parameters, .progress: observe(order)
                }
            }
            guard let deadline = uploader.nextDeadline else { throw .upload(.deviceStoppedAnswering(offset: uploader.confirmedOffset)) }
            if let datagram = try receive(until: deadline) {
                orders = uploader.received(datagram, at: now)
            } else {
                orders = uploader.handleTimeout(at: now)
            }
        }
    }

    private func sendOrThrow(_ request: SMPRequest, timeout: Duration?) throws(FirmwareUDPError) -> (SMPClient.Tag, [SMPClient.Order]) {
        do {
            return try client.send(request, at: now, timeout: timeout)
        } catch {
            throw .client(error)
        }
    }

    /// What the core orders next: after a datagram arrives, or at the earliest deadline.
    private func waitForOrders() throws(FirmwareUDPError) -> [SMPClient.Order] {
        guard let deadline = client.nextDeadline else { return [] }
        if let datagram = try receive(until: deadline) { return client.received(datagram, at: now) }
        return client.handleTimeout(at: now)
    }

    /// One datagram, or nil once `deadline` has passed.
    private func receive(until deadline: Timestamp) throws(FirmwareUDPError) -> [UInt8]? {
        while true {
            let remaining = now.duration(to: deadline)
            guard remaining > .zero else { return nil }
            let milliseconds = Int32(clamping: (remaining.components.seconds * 1000) + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            do {
                if let received = try socket.receive(waitingAtMost: milliseconds) { return received.0 }
            } catch {
                throw .transport(error.description)
            }
        }
    }

    private func write(_ orders: [SMPClient.Order]) throws(FirmwareUDPError) {
        for case .write(let bytes) in orders { try write(bytes) }
    }

    private func write(_ bytes: [UInt8]) throws(FirmwareUDPError) {
        do {
            try socket.send(bytes)
        } catch {
            throw .transport(error.description)
        }
    }
}

/// Why a firmware operation over UDP did not complete, by who is at fault.
public enum FirmwareUDPError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The socket: the host cannot be resolved, or the network refused a datagram.
    case transport(String)
    /// The client core: no answer after every retry, a request too large for the device.
    case client(SMPClientError)
    /// The device answered with an error.
    case device(SMPDeviceError)
    /// The device's answer is not what SMP says it should be.
    case malformed(SMPDecodeError)
    case upload(UploadFailure)

    public var description: String {
        switch self {
        case .transport(let message): return message
        case .client(.timedOut): return "the device did not answer (every retry timed out)"
        case .client(let error): return "request failed: \(error)"
        case .device(let error): return "the device refused: \(error)"
        case .malformed(let error): return "the device's answer is malformed: \(error)"
        case .upload(.deviceStoppedAnswering(let offset)): return "the device stopped answering at offset \(offset)"
        case .upload(.device(let error)): return "the device refused the upload: \(error)"
        case .upload(let failure): return "upload failed: \(failure)"
        }
    }
}
