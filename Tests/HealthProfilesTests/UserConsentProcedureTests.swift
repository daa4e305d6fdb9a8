import Testing
import TetherPrimitives
@testable import HealthProfiles

/// `UserConsentProcedure`'s rules one by one, with a manual clock: every order asserted.
@Suite struct UserConsentProcedureTests {
    typealias Procedure = UserConsentProcedure
    static let t0 = Timestamp(nanoseconds: 1_000_000_000_000)

    static func at(_ seconds: Int64) -> Timestamp { t0.advanced(by: .seconds(seconds)) }

    static func credential(_ index: UInt8, _ code: UInt16) -> Procedure.Credential {
        Procedure.Credential(userIndex: index, code: ConsentCode(code)!)
    }

    static func consent(_ index: UInt8, _ code: UInt16) -> Procedure.Order {
        .write(.consent(userIndex: index, consentCode: ConsentCode(code)!))
    }

    // UDS v1.0 §3.4: Response Code 0x20, request op code Consent 0x02, then the value.
    static let success: [UInt8] = [0x20, 0x02, 0x01]
    static let notAuthorized: [UInt8] = [0x20, 0x02, 0x05]

    @Test func twoUsersConsentOneAfterTheOther() {
        var procedure = Procedure(credentials: [Self.credential(2, 1111), Self.credential(1, 4321)])
        // Rule 2: index order. Rule 1: only the first is written.
        #expect(procedure.start(at: Self.at(0)) == [Self.consent(1, 4321), .armTimer(at: Self.at(30))])
        // The write on the wire, by hand: 02 01 E1 10.
        #expect(UserControlPointRequest.consent(userIndex: 1, consentCode: ConsentCode(4321)!).bytes == [0x02, 0x01, 0xE1, 0x10])
        #expect(procedure.indicationReceived(Self.success, at: Self.at(1)) == [
            .cancelTimer, .outcome(userIndex: 1, .consented), Self.consent(2, 1111), .armTimer(at: Self.at(31)),
        ])
        #expect(procedure.indicationReceived(Self.success, at: Self.at(2)) == [
            .cancelTimer, .outcome(userIndex: 2, .consented),
            .finished([.init(userIndex: 1, outcome: .consented), .init(userIndex: 2, outcome: .consented)]),
        ])
        #expect(procedure.isFinished)
        #expect(procedure.indicationReceived(Self.success, at: Self.at(3)) == [.noted("an indication while no Consent awaits its answer")])
    }

    @Test func aWrongCodeIsNotAuthorizedAndTheNextUserIsStillAsked() {
        var procedure = Procedure(credentials: [Self.credential(1, 4321), Self.credential(2, 9)])
        _ = procedure.start(at: Self.at(0))
        _ = procedure.indicationReceived(Self.success, at: Self.at(1))
        #expect(procedure.indicationReceived(Self.notAuthorized, at: Self.at(2)) == [
            .cancelTimer, .outcome(userIndex: 2, .notAuthorized),
            .finished([.init(userIndex: 1, outcome: .consented), .init(userIndex: 2, outcome: .notAuthorized)]),
        ])
    }

    @Test func otherResponseValuesFailTheUser() {
        // Invalid Parameter: a user index the device does not have (rule 3).
        var procedure = Procedure(credentials: [Self.credential(7, 1)])
        _ = procedure.start(at: Self.at(0))
        #expect(procedure.indicationReceived([0x20, 0x02, 0x03], at: Self.at(1)) == [
            .cancelTimer, .outcome(userIndex: 7, .failed(.response(.invalidParameter))),
            .finished([.init(userIndex: 7, outcome: .failed(.response(.invalidParameter)))]),
        ])
    }

    @Test func noAnswerTimesOutAndMovesOn() {
        var procedure = Procedure(credentials: [Self.credential(1, 4321), Self.credential(2, 1111)])
        _ = procedure.start(at: Self.at(0))
        // A timer that fires early (a stale one) only arms again.
        #expect(procedure.timerFired(at: Self.at(10)) == [.armTimer(at: Self.at(30))])
        #expect(procedure.timerFired(at: Self.at(30)) == [
            .outcome(userIndex: 1, .timedOut), Self.consent(2, 1111), .armTimer(at: Self.at(60)),
        ])
        #expect(procedure.indicationReceived(Self.success, at: Self.at(31)) == [
            .cancelTimer, .outcome(userIndex: 2, .consented),
            .finished([.init(userIndex: 1, outcome: .timedOut), .init(userIndex: 2, outcome: .consented)]),
        ])
    }

    @Test func procedureAlreadyInProgressIsWaitedOutThenGivenUp() {
        var configuration = Procedure.Configuration()
        configuration.busyRetryDelay = .seconds(1)
        configuration.busyRetryLimit = 2
        var procedure = Procedure(credentials: [Self.credential(1, 4321), Self.credential(2, 1111)], configuration: configuration)
        _ = procedure.start(at: Self.at(0))
        // Rule 5: ATT 0xFE, the device runs a procedure already: the same Consent again after the delay.
        #expect(procedure.writeFailed(attError: 0xFE, at: Self.at(0)) == [.cancelTimer, .armTimer(at: Self.at(1))])
        // An indication while backing off decides nothing.
        #expect(procedure.indicationReceived(Self.success, at: Self.at(0)) == [.noted("an indication while no Consent awaits its answer")])
        #expect(procedure.timerFired(at: Self.at(1)) == [Self.consent(1, 4321), .armTimer(at: Self.at(31))])
        // Busy again, then answered: consented.
        #expect(procedure.writeFailed(attError: 0xFE, at: Self.at(1)) == [.cancelTimer, .armTimer(at: Self.at(2))])
        #expect(procedure.timerFired(at: Self.at(2)) == [Self.consent(1, 4321), .armTimer(at: Self.at(32))])
        #expect(procedure.indicationReceived(Self.success, at: Self.at(3)) == [
            .cancelTimer, .outcome(userIndex: 1, .consented), Self.consent(2, 1111), .armTimer(at: Self.at(33)),
        ])
        // User 2: busy on the first write and both retries (limit 2): given up.
        #expect(procedure.writeFailed(attError: 0xFE, at: Self.at(3)) == [.cancelTimer, .armTimer(at: Self.at(4))])
        _ = procedure.timerFired(at: Self.at(4))
        #expect(procedure.writeFailed(attError: 0xFE, at: Self.at(4)) == [.cancelTimer, .armTimer(at: Self.at(5))])
        _ = procedure.timerFired(at: Self.at(5))
        #expect(procedure.writeFailed(attError: 0xFE, at: Self.at(5)) == [
            .cancelTimer, .outcome(userIndex: 2, .failed(.procedureAlreadyInProgress)),
            .finished([.init(userIndex: 1, outcome: .consented), .init(userIndex: 2, outcome: .failed(.procedureAlreadyInProgress))]),
        ])
    }

    @Test func otherWriteErrorsFailTheUserAndASilentOneWaitsForTheTimeout() {
        var procedure = Procedure(credentials: [Self.credential(1, 4321), Self.credential(2, 1111)])
        _ = procedure.start(at: Self.at(0))
        // 0xFD: the control point's indications are not enabled.
        #expect(procedure.writeFailed(attError: 0xFD, at: Self.at(0)) == [
            .cancelTimer, .outcome(userIndex: 1, .failed(.writeRefused(attError: 0xFD))), Self.consent(2, 1111),
            .armTimer(at: Self.at(30)),
        ])
        #expect(procedure.writeFailed(attError: nil, at: Self.at(0)) == [.noted("the write got no answer; the response time-out decides")])
        #expect(procedure.timerFired(at: Self.at(30)).contains(.outcome(userIndex: 2, .timedOut)))
        #expect(procedure.isFinished)
    }

    @Test func strayIndicationsAreNoted() {
        var procedure = Procedure(credentials: [Self.credential(1, 4321)])
        _ = procedure.start(at: Self.at(0))
        // A response to Register New User, and bytes that are no response: rule 6, still waiting.
        #expect(procedure.indicationReceived([0x20, 0x01, 0x01, 0x04], at: Self.at(1)) == [.noted("a response to Register New User, not to Consent")])
        guard case .noted = procedure.indicationReceived([0x02, 0x01], at: Self.at(1)).first else {
            Issue.record("bad bytes must only be noted")
            return
        }
        #expect(procedure.indicationReceived(Self.success, at: Self.at(2)).contains(.outcome(userIndex: 1, .consented)))
    }

    @Test func theLinkGoingDownEndsEveryUser() {
        var procedure = Procedure(credentials: [Self.credential(1, 4321), Self.credential(2, 1111), Self.credential(3, 5)])
        _ = procedure.start(at: Self.at(0))
        _ = procedure.indicationReceived(Self.success, at: Self.at(1))
        #expect(procedure.disconnected(at: Self.at(2)) == [
            .cancelTimer, .outcome(userIndex: 2, .interrupted), .outcome(userIndex: 3, .notAttempted),
            .finished([
                .init(userIndex: 1, outcome: .consented), .init(userIndex: 2, outcome: .interrupted),
                .init(userIndex: 3, outcome: .notAttempted),
            ]),
        ])
        #expect(procedure.disconnected(at: Self.at(3)) == [.noted("already finished")])
    }

    @Test func noUsersFinishesAtOnceAndTheLastCredentialForAnIndexWins() {
        var empty = Procedure(credentials: [])
        #expect(empty.start(at: Self.at(0)) == [.finished([])])
        var twice = Procedure(credentials: [Self.credential(1, 1), Self.credential(1, 2)])
        #expect(twice.start(at: Self.at(0)) == [Self.consent(1, 2), .armTimer(at: Self.at(30))])
    }
}
