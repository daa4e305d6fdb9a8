import SMP
import TetherPrimitives

/// The transport-neutral half of an SMP session: one request, or one image upload, between the sans-I/O cores
/// (`SMPClient`, `ImageUploader`) and a transport's I/O edge. The edge (`SMPUDPSession`, `SMPBluetoothSession`) only
/// carries out a step: it writes `writes` in order, reports `observed`, stops at `outcome`, and otherwise waits for
/// bytes until `deadline` and feeds them in (`received`), or feeds the deadline in when nothing came (`timedOut`), or
/// the link's loss (`linkLost`). Everything the two transports share lives here, so neither copies the other.
protocol SMPExchange {
    associatedtype Outcome
    /// When to call `timedOut` if nothing arrives first; nil once the outcome is known.
    var deadline: Timestamp? { get }
    mutating func received(_ bytes: [UInt8], at now: Timestamp) -> SMPExchangeStep<Outcome>
    mutating func timedOut(at now: Timestamp) -> SMPExchangeStep<Outcome>
    mutating func linkLost(at now: Timestamp) -> SMPExchangeStep<Outcome>
}

/// What the edge does next: write, report, and stop with the outcome when there is one.
struct SMPExchangeStep<Outcome> {
    var writes: [[UInt8]] = []
    var observed: [UploadOrder] = []
    var outcome: Result<Outcome, FirmwareTransportError>?
}

/// One request through `SMPClient`: its answer (which may carry a device error), or the client's error.
struct SMPRequestExchange: SMPExchange {
    private(set) var client: SMPClient
    let tag: SMPClient.Tag

    /// Sends `request`; throws when the client refuses it outright (too large for one write, no free sequence).
    static func start(
        _ request: SMPRequest, client: SMPClient, timeout: Duration?, at now: Timestamp
    ) throws(FirmwareTransportError) -> (SMPRequestExchange, SMPExchangeStep<SMPResponse>) {
        var client = client
        let sent: (SMPClient.Tag, [SMPClient.Order])
        do {
            sent = try client.send(request, at: now, timeout: timeout)
        } catch {
            throw .client(error)
        }
        var exchange = SMPRequestExchange(client: client, tag: sent.0)
        let first = exchange.step(sent.1)
        return (exchange, first)
    }

    var deadline: Timestamp? { client.nextDeadline }

    mutating func received(_ bytes: [UInt8], at now: Timestamp) -> SMPExchangeStep<SMPResponse> {
        step(client.received(bytes, at: now))
    }

    mutating func timedOut(at now: Timestamp) -> SMPExchangeStep<SMPResponse> { step(client.handleTimeout(at: now)) }

    mutating func linkLost(at now: Timestamp) -> SMPExchangeStep<SMPResponse> { step(client.connectionLost()) }

    private mutating func step(_ orders: [SMPClient.Order]) -> SMPExchangeStep<SMPResponse> {
        var step = SMPExchangeStep<SMPResponse>()
        for order in orders {
            switch order {
            case .write(let bytes): step.writes.append(bytes)
            case .completed(tag, .success(let response)): step.outcome = .success(response)
            case .completed(tag, .failure(let error)): step.outcome = .failure(.client(error))
            // Late answers to requests given up on, and bytes that are not a response: SMPClient rule 1.
            case .completed, .discarded, .unmatched: continue
            }
        }
        if step.outcome == nil, client.nextDeadline == nil { step.outcome = .failure(.client(.timedOut)) }
        return step
    }
}

/// One image upload through `ImageUploader`, from its start or, on a new link, from the device's offset
/// (ImageUploader rule 5).
struct SMPUploadExchange: SMPExchange {
    private(set) var uploader: ImageUploader

    /// Starts the upload, or resumes it on a new link with `writeLimit` bytes per write.
    static func start(_ uploader: ImageUploader, writeLimit: Int, at now: Timestamp) -> (SMPUploadExchange, SMPExchangeStep<Void>) {
        var uploader = uploader
        var orders = uploader.start(at: now)
        // Not the first link: `start` has nothing more to say, `connected` begins again at offset 0 with the same sha.
        if orders.isEmpty { orders = uploader.connected(writeLimit: writeLimit, at: now) }
        var exchange = SMPUploadExchange(uploader: uploader)
        let first = exchange.step(orders)
        return (exchange, first)
    }

    var deadline: Timestamp? { uploader.nextDeadline }

    mutating func received(_ bytes: [UInt8], at now: Timestamp) -> SMPExchangeStep<Void> { step(uploader.received(bytes, at: now)) }

    mutating func timedOut(at now: Timestamp) -> SMPExchangeStep<Void> { step(uploader.handleTimeout(at: now)) }

    mutating func linkLost(at now: Timestamp) -> SMPExchangeStep<Void> {
        var lost = step(uploader.connectionLost(at: now))
        lost.outcome = .failure(.client(.connectionLost))
        return lost
    }

    private mutating func step(_ orders: [UploadOrder]) -> SMPExchangeStep<Void> {
        var step = SMPExchangeStep<Void>()
        for order in orders {
            switch order {
            case .write(let bytes): step.writes.append(bytes)
            case .parameters, .progress: step.observed.append(order)
            case .finished:
                step.observed.append(order)
                step.outcome = .success(())
            case .failed(let failure): step.outcome = .failure(.upload(failure))
            }
        }
        if step.outcome == nil, uploader.nextDeadline == nil {
            step.outcome = .failure(.upload(.deviceStoppedAnswering(offset: uploader.confirmedOffset)))
        }
        return step
    }
}
