import SyncContract
import Testing
@testable import TetherSync
import TetherSyncTesting
import TetherPrimitives

@Suite("Health upload rules: what an answer means, when to run again")
struct HealthUploadRulesTests {
    @Test("applied and duplicate are uploaded, rejected keeps its reason; a count or uid mismatch fails the whole request")
    func verdicts() throws {
        let uids = ["a", "b", "c"]
        let results = [
            HealthUploadResult(uid: "a", status: .applied), HealthUploadResult(uid: "b", status: .duplicate),
            HealthUploadResult(uid: "c", status: .rejected, reason: "reported.unit is empty"),
        ]
        let verdicts = try HealthUploadRules.verdicts(sent: uids, results: results).get()
        #expect(verdicts.map(\.uid) == uids)
        #expect(verdicts.map(\.verdict) == [.uploaded, .uploaded, .rejected(reason: "reported.unit is empty")])
        #expect(throws: SyncFailure(.protocolViolation, "")) { try HealthUploadRules.verdicts(sent: uids, results: Array(results.prefix(2))).get() }
        #expect(throws: SyncFailure(.protocolViolation, "")) {
            try HealthUploadRules.verdicts(sent: uids, results: [results[1], results[0], results[2]]).get()
        }
    }

    @Test("a batch refused for its size goes on smaller: to the server's maximum, or half; anything else is not about size")
    func smallerBatches() {
        let tooLong = SyncFailure(.rejected, "batch-too-long", status: 400, problem: Problem(.batchTooLong, maxCommands: 40))
        #expect(HealthUploadRules.smallerBatch(after: tooLong, sent: 500) == 40)
        #expect(HealthUploadRules.smallerBatch(after: tooLong, sent: 60) == 30, "never more than half of what was sent")
        #expect(HealthUploadRules.smallerBatch(after: SyncFailure(.rejected, "413", status: 413), sent: 500) == 250)
        #expect(HealthUploadRules.smallerBatch(after: SyncFailure(.rejected, "413", status: 413), sent: 1) == nil, "one item is not a batch problem")
        #expect(HealthUploadRules.smallerBatch(after: SyncFailure(.server, "500", status: 500), sent: 500) == nil)
        #expect(HealthUploadRules.smallerBatch(after: SyncFailure(.rejected, "404", status: 404), sent: 500) == nil)
    }

    @Test("the pacing waits at least Retry-After (up to the cap) after a failure and resets after a success")
    func pacing() {
        var pacing = HealthUploadPacing(backoff: Backoff(base: .seconds(1), cap: .seconds(300)))
        var random = SplitMix64(seed: 1)
        let now = GatewayFixture.start
        #expect(pacing.mayRun(at: now))
        let next = pacing.failed(SyncFailure(.rateLimited, "429", retryAfter: .seconds(30)), at: now, using: &random)
        #expect(next >= now.advanced(by: .seconds(30)) && next <= now.advanced(by: .seconds(300)))
        #expect(!pacing.mayRun(at: now.advanced(by: .seconds(29))))
        #expect(pacing.mayRun(at: next))
        for _ in 0..<20 { pacing.failed(SyncFailure(.server, "500"), at: now, using: &random) }
        #expect(pacing.notBefore.map { $0 <= now.advanced(by: .seconds(300)) } == true, "capped")
        pacing.succeeded()
        #expect(pacing.mayRun(at: now) && pacing.consecutiveFailures == 0)
    }

    @Test("raw bytes go on the wire in lowercase hex, two digits a byte")
    func wireForm() throws {
        #expect(HealthUploadWire.hex([0x02, 0x0A, 0xFF, 0x00]) == "020aff00")
        #expect(HealthUploadWire.hex([]) == "")
    }
}
