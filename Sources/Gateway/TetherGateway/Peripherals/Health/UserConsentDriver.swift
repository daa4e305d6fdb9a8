import BlueZ
import HealthProfiles
import TetherPrimitives

/// The consent procedure's I/O on one connection of a multi-user device (User Data Service): it feeds a
/// `UserConsentProcedure` the facts (User Control Point indications, its timer, write refusals, the link going
/// down) one at a time from one inbox, and carries out its orders: WriteValue on the control point (write with
/// response; the ATT error read from BlueZ's "ATT error: 0x.."), a timer on the gateway's clock, each user's outcome
/// to `report`. Nothing here decides anything; no consent code is ever logged or traced from here (the orders name
/// users, the bytes go to BlueZ only).
struct UserConsentDriver: Sendable {
    enum Event: Sendable {
        /// The User Control Point indicated these bytes.
        case indication([UInt8])
        case timer
        case linkDown
    }

    let controlPoint: GattCharacteristic
    let writeTimeout: Duration
    let clock: GatewayClock
    let events: AsyncStream<Event>.Continuation
    /// Told each user's outcome as it is decided.
    let report: @Sendable (UInt8, UserConsentProcedure.Outcome) -> Void
    var procedure: UserConsentProcedure
    private var timer: Task<Void, Never>?

    init(
        credentials: [UserConsentProcedure.Credential], configuration: UserConsentProcedure.Configuration = .init(),
        controlPoint: GattCharacteristic, writeTimeout: Duration, clock: GatewayClock,
        events: AsyncStream<Event>.Continuation, report: @escaping @Sendable (UInt8, UserConsentProcedure.Outcome) -> Void
    ) {
        procedure = UserConsentProcedure(credentials: credentials, configuration: configuration)
        self.controlPoint = controlPoint
        self.writeTimeout = writeTimeout
        self.clock = clock
        self.events = events
        self.report = report
    }

    /// Runs the procedure until it finishes or the link goes down (the inbox finishing, or its task cancelled, is
    /// the link going down too).
    mutating func run(_ inbox: AsyncStream<Event>) async {
        await execute(procedure.start(at: clock.linkNow()))
        for await event in inbox {
            if procedure.isFinished { break }
            let now = clock.linkNow()
            switch event {
            case .indication(let bytes):
                await execute(procedure.indicationReceived(bytes, at: now))
            case .timer:
                await execute(procedure.timerFired(at: now))
            case .linkDown:
                await execute(procedure.disconnected(at: now))
            }
            if procedure.isFinished { break }
        }
        if !procedure.isFinished { await execute(procedure.disconnected(at: clock.linkNow())) }
        timer?.cancel()
    }

    private mutating func execute(_ orders: [UserConsentProcedure.Order]) async {
        var queue = orders[...]
        while let order = queue.popFirst() {
            switch order {
            case .write(let request):
                do {
                    try await controlPoint.writeValue(request.bytes, type: .request, timeout: writeTimeout)
                } catch let error as BlueZError where error.attErrorCode != nil {
                    queue += procedure.writeFailed(attError: error.attErrorCode, at: clock.linkNow())
                } catch {
                    // Not the device's answer (the link dropping, a local time-out): rule 4 or the link-down fact.
                    queue += procedure.writeFailed(attError: nil, at: clock.linkNow())
                }
            case .armTimer(let at):
                timer?.cancel()
                let (clock, events) = (clock, events)
                timer = Task {
                    do { try await clock.sleep(max(clock.linkNow().duration(to: at), .zero)) } catch { return }
                    events.yield(.timer)
                }
            case .cancelTimer:
                timer?.cancel()
                timer = nil
            case .outcome(let userIndex, let outcome):
                report(userIndex, outcome)
            case .finished, .noted:
                break
            }
        }
    }
}
