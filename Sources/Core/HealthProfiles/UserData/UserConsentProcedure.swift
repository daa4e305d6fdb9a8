import TetherPrimitives

/// Consent on one connection of a multi-user device (a family's scale: Weight Scale Service with the User Data
/// Service): for each user the gateway holds a consent code for, write Consent and await its Response Code, one
/// user at a time. Sans-I/O: facts in (`start`, `indicationReceived`, `writeFailed`, `timerFired`, `disconnected`),
/// orders out (`write`, `armTimer`, `cancelTimer`, `outcome`, `finished`, `noted`); time comes in with every fact.
///
/// Everything that decides what the procedure does lives in this file. Rules:
/// 1. One procedure at a time (UDS v1.0 §3.4: the server runs one User Control Point procedure at a time and
///    refuses a write while one runs with ATT error 0xFE, Procedure Already In Progress): the next user's Consent
///    is written only after the previous one's Response Code, time-out or refusal.
/// 2. Users in index order, each once (the last credential given for an index wins; the configuration refuses
///    duplicates before this).
/// 3. A Response Code for Consent decides the user: Success → `consented`; User Not Authorized (a wrong consent
///    code) → `notAuthorized`; any other value (Invalid Parameter: an index the device does not have; Operation
///    Failed; Op Code Not Supported; an unknown value) → `failed(.response(value))`.
/// 4. No Response Code within `responseTimeout` of the write (default 30 s, the ATT transaction time-out, Core
///    v5.3 Vol 3 Part F §3.3.3, which UDS's procedure time-out follows) → `timedOut`, and on to the next user.
/// 5. ATT 0xFE on the write: the device still runs a procedure (ours that timed out, or another client's). Wait
///    `busyRetryDelay` and write the same Consent again, at most `busyRetryLimit` times; then
///    `failed(.procedureAlreadyInProgress)`. Any other ATT error on the write (0xFD: the control point's
///    indications are not enabled; 0x05: not encrypted) → `failed(.writeRefused(code))`. A write that fails
///    without the device's answer (the link dropping, a local time-out) is left to rule 4 or to `disconnected`.
/// 6. An indication that is not a Response Code for Consent (bytes that do not decode, a response to another op
///    code), or that arrives when no Consent awaits its answer, decides nothing: `noted`.
/// 7. The link going down ends the procedure: the user awaiting an answer is `interrupted`, the users not yet
///    asked `notAttempted`. Then `finished` with every user's outcome, once.
///
/// Limit: a Response Code arriving after its request timed out, once the next user's Consent is written, cannot
/// be told from that user's answer (a response names the op code, not the user). Rule 5 makes this unlikely: the
/// device refuses the next write while the timed-out procedure still runs.
public struct UserConsentProcedure: Sendable {
    /// A user to consent: its index and the code the device registered it with.
    public struct Credential: Hashable, Sendable {
        public var userIndex: UInt8
        public var code: ConsentCode

        public init(userIndex: UInt8, code: ConsentCode) {
            self.userIndex = userIndex
            self.code = code
        }
    }

    public struct Configuration: Hashable, Sendable {
        public var responseTimeout: Duration = .seconds(30)
        public var busyRetryDelay: Duration = .seconds(1)
        public var busyRetryLimit = 3

        public init() {}
    }

    /// How one user's consent ended.
    public enum Outcome: Hashable, Sendable, CustomStringConvertible {
        case consented
        /// The device refused the code (User Not Authorized).
        case notAuthorized
        case failed(Failure)
        case timedOut
        /// The link went down while its answer was awaited.
        case interrupted
        /// The link went down before it was asked.
        case notAttempted

        public var description: String {
            switch self {
            case .consented: "consented"
            case .notAuthorized: "not authorized"
            case .failed(let failure): "failed: \(failure)"
            case .timedOut: "timed out"
            case .interrupted: "interrupted"
            case .notAttempted: "not attempted"
            }
        }
    }

    public enum Failure: Hashable, Sendable, CustomStringConvertible {
        /// A Response Code other than Success or User Not Authorized.
        case response(UserControlPointResult)
        /// ATT 0xFE on every attempt (rule 5).
        case procedureAlreadyInProgress
        /// Another ATT error on the write.
        case writeRefused(attError: UInt8)
        /// The control point's indications could not be enabled, so no answer could be heard: nothing was written.
        case indicationsUnavailable

        public var description: String {
            switch self {
            case .response(let result): "the device answered \(result)"
            case .procedureAlreadyInProgress: "the device kept another procedure running (ATT 0xFE)"
            case .writeRefused(let code): "the device refused the write (ATT error 0x\(String(code, radix: 16, uppercase: true)))"
            case .indicationsUnavailable: "the User Control Point's indications could not be enabled"
            }
        }
    }

    public enum Order: Hashable, Sendable {
        /// Write these bytes to the User Control Point (write with response). `request` names it without the code.
        case write(UserControlPointRequest)
        case armTimer(at: Timestamp)
        case cancelTimer
        /// One user's consent ended (in the order decided).
        case outcome(userIndex: UInt8, Outcome)
        /// Every user's outcome, in index order; the procedure does nothing more.
        case finished([UserOutcome])
        /// A fact that changed nothing (rule 6), and why.
        case noted(String)
    }

    public struct UserOutcome: Hashable, Sendable {
        public var userIndex: UInt8
        public var outcome: Outcome
    }

    /// What the procedure is doing; each phase holds what it needs.
    enum Phase: Hashable, Sendable {
        case idle
        /// Consent for `user` written (attempt `attempt`, from 1); its answer is due by `deadline`.
        case awaitingResponse(user: Credential, attempt: Int, deadline: Timestamp)
        /// The device was busy (ATT 0xFE): the same Consent is written again at `until`.
        case backingOff(user: Credential, attempt: Int, until: Timestamp)
        case finished
    }

    public let configuration: Configuration
    private(set) var phase: Phase = .idle
    private var waiting: [Credential]
    private var outcomes: [UserOutcome] = []

    public init(credentials: [Credential], configuration: Configuration = Configuration()) {
        self.configuration = configuration
        // Rule 2.
        var byIndex: [UInt8: Credential] = [:]
        for credential in credentials { byIndex[credential.userIndex] = credential }
        waiting = byIndex.values.sorted { $0.userIndex < $1.userIndex }
    }

    public var isFinished: Bool { phase == .finished }

    /// Every outcome decided so far, in the order decided.
    public var decided: [UserOutcome] { outcomes }

    // MARK: Facts

    public mutating func start(at now: Timestamp) -> [Order] {
        switch phase {
        case .idle: return next(at: now)
        case .awaitingResponse, .backingOff, .finished: return [.noted("already started")]
        }
    }

    public mutating func indicationReceived(_ bytes: [UInt8], at now: Timestamp) -> [Order] {
        switch phase {
        case .awaitingResponse(let user, _, _):
            let response: UserControlPointResponse
            do {
                response = try UserControlPointResponse.decode(bytes)
            } catch {
                return [.noted("not a User Control Point response: \(error)")]  // rule 6
            }
            guard response.request == .consent else {
                return [.noted("a response to \(response.request), not to Consent")]  // rule 6
            }
            // Rule 3.
            let outcome: Outcome = switch response.result {
            case .success: .consented
            case .userNotAuthorized: .notAuthorized
            case .opCodeNotSupported, .invalidParameter, .operationFailed, .unknown: .failed(.response(response.result))
            }
            return [.cancelTimer] + decide(user, outcome) + next(at: now)
        case .idle, .backingOff, .finished:
            return [.noted("an indication while no Consent awaits its answer")]  // rule 6
        }
    }

    /// The write of the current request failed with this ATT error (nil: no answer from the device).
    public mutating func writeFailed(attError: UInt8?, at now: Timestamp) -> [Order] {
        switch phase {
        case .awaitingResponse(let user, let attempt, _):
            guard let attError else { return [.noted("the write got no answer; the response time-out decides")] }
            if attError == 0xFE {
                // Rule 5.
                guard attempt <= configuration.busyRetryLimit else {
                    return [.cancelTimer] + decide(user, .failed(.procedureAlreadyInProgress)) + next(at: now)
                }
                let until = now.advanced(by: configuration.busyRetryDelay)
                phase = .backingOff(user: user, attempt: attempt, until: until)
                return [.cancelTimer, .armTimer(at: until)]
            }
            return [.cancelTimer] + decide(user, .failed(.writeRefused(attError: attError))) + next(at: now)
        case .idle, .backingOff, .finished:
            return [.noted("a write failure while no write is outstanding")]
        }
    }

    public mutating func timerFired(at now: Timestamp) -> [Order] {
        switch phase {
        case .awaitingResponse(let user, _, let deadline):
            guard now >= deadline else { return [.armTimer(at: deadline)] }
            return decide(user, .timedOut) + next(at: now)  // rule 4
        case .backingOff(let user, let attempt, let until):
            guard now >= until else { return [.armTimer(at: until)] }
            return write(user, attempt: attempt + 1, at: now)
        case .idle, .finished:
            return [.noted("a timer with nothing to time")]
        }
    }

    public mutating func disconnected(at now: Timestamp) -> [Order] {
        // Rule 7.
        var orders: [Order] = [.cancelTimer]
        switch phase {
        case .awaitingResponse(let user, _, _), .backingOff(let user, _, _):
            orders += decide(user, .interrupted)
        case .idle:
            break
        case .finished:
            return [.noted("already finished")]
        }
        for user in waiting { orders += decide(user, .notAttempted) }
        waiting = []
        return orders + finish()
    }

    // MARK: Steps

    private mutating func next(at now: Timestamp) -> [Order] {
        guard !waiting.isEmpty else { return finish() }
        let user = waiting.removeFirst()
        return write(user, attempt: 1, at: now)
    }

    private mutating func write(_ user: Credential, attempt: Int, at now: Timestamp) -> [Order] {
        let deadline = now.advanced(by: configuration.responseTimeout)
        phase = .awaitingResponse(user: user, attempt: attempt, deadline: deadline)
        return [.write(.consent(userIndex: user.userIndex, consentCode: user.code)), .armTimer(at: deadline)]
    }

    private mutating func decide(_ user: Credential, _ outcome: Outcome) -> [Order] {
        outcomes.append(UserOutcome(userIndex: user.userIndex, outcome: outcome))
        phase = .idle
        return [.outcome(userIndex: user.userIndex, outcome)]
    }

    private mutating func finish() -> [Order] {
        phase = .finished
        return [.finished(outcomes.sorted { $0.userIndex < $1.userIndex })]
    }
}
