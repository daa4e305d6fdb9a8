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

    public init(host: String, port: UInt16, configuration: SMPClient.Configuration) throws(FirmwareTransportError) {
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
    public func perform(_ request: SMPRequest, timeout: Duration? = nil) throws(FirmwareTransportError) -> SMPResponse {
        let started = try SMPRequestExchange.start(request, client: client, timeout: timeout, at: now)
        var exchange = started.0
        defer { client = exchange.client }
        return try run(&exchange, from: started.1, observe: { _ in })
    }

    /// Drives an ImageUploader to its end, reporting each order it gives to `observe` (progress, parameters).
    public func drive(_ uploader: inout ImageUploader, observe: (UploadOrder) -> Void) throws(FirmwareTransportError) {
        let started = SMPUploadExchange.start(uploader, writeLimit: client.configuration.writeLimit, at: now)
        var exchange = started.0
        defer { uploader = exchange.uploader }
        try run(&exchange, from: started.1, observe: observe)
    }

    /// The I/O half of an exchange: write, report, and feed it a datagram or its deadline until it has an outcome.
    private func run<Exchange: SMPExchange>(
        _ exchange: inout Exchange, from first: SMPExchangeStep<Exchange.Outcome>, observe: (UploadOrder) -> Void
    ) throws(FirmwareTransportError) -> Exchange.Outcome {
        var step = first
        while true {
            for bytes in step.writes { try write(bytes) }
            step.observed.forEach(observe)
            if let outcome = step.outcome { return try outcome.get() }
            // A step without an outcome always leaves a deadline (SMPExchange); `now` only guards the type.
            if let datagram = try receive(until: exchange.deadline ?? now) {
                step = exchange.received(datagram, at: now)
            } else {
                step = exchange.timedOut(at: now)
            }
        }
    }

    /// One datagram, or nil once `deadline` has passed.
    private func receive(until deadline: Timestamp) throws(FirmwareTransportError) -> [UInt8]? {
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

    private func write(_ bytes: [UInt8]) throws(FirmwareTransportError) {
        do {
            try socket.send(bytes)
        } catch {
            throw .transport(error.description)
        }
    }
}
