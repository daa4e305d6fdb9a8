import Foundation
import GRDB
import Testing
@testable import TetherStore
import TetherPrimitives
import SyncContract

@Suite("Firmware update journal: one unfinished update per device, forward only, durable across a reopen")
struct FirmwareUpdateJournalTests {
    let now = Timestamp(nanoseconds: 1_793_520_000_000_000_000)

    func request(_ address: String = "c0:54:45:00:00:07", bytes: Int = 66_192) -> FirmwareUpdateJournal.Request {
        FirmwareUpdateJournal.Request(
            address: address, imageVersion: "9.9.9+1", imageHash: Array(repeating: 0xAB, count: 32),
            uploadSha256: Array(repeating: 0xCD, count: 32), imageBytes: bytes, imagePath: "/var/lib/tether/firmware/abcd.img",
            proveFor: .milliseconds(2500))
    }

    @Test("an update runs uploading → testing → proving → confirming → finished, with the device's offsets")
    func throughTheFlow() throws {
        let journal = FirmwareUpdateJournal(database: try GatewayDatabase.inMemory())
        var random = SplitMix64(seed: 1)
        let begun = try journal.begin(request(), at: now, using: &random)
        #expect(begun.address == "C0:54:45:00:00:07", "addresses are kept upper-case")
        #expect(begun.phase == .uploading && begun.bytesAcknowledged == 0 && begun.attempts == 1)
        #expect(begun.proveForMilliseconds == 2500)
        try journal.acknowledged(begun.uid, offset: 4096, at: now.plus(milliseconds: 10))
        try journal.acknowledged(begun.uid, offset: 66_192, at: now.plus(milliseconds: 20))
        try journal.advance(begun.uid, to: .testing, at: now.plus(milliseconds: 30))
        try journal.advance(begun.uid, to: .proving, at: now.plus(milliseconds: 40))
        try journal.advance(begun.uid, to: .confirming, at: now.plus(milliseconds: 50))
        let done = try journal.finish(begun.uid, .confirmed, at: now.plus(milliseconds: 60), using: &random)
        #expect(done.phase == .finished && done.outcome == .confirmed)
        #expect(done.finishedAt == now.plus(milliseconds: 60).nanoseconds)
        #expect(done.bytesAcknowledged == 66_192)
        #expect(try journal.unfinished().isEmpty)
        #expect(try journal.history(address: "C0:54:45:00:00:07").map(\.uid) == [begun.uid])
    }

    @Test("a device has at most one unfinished update; once it finished, the next may begin")
    func oneUnfinishedPerDevice() throws {
        let journal = FirmwareUpdateJournal(database: try GatewayDatabase.inMemory())
        var random = SplitMix64(seed: 2)
        let first = try journal.begin(request(), at: now, using: &random)
        let refusal = #expect(throws: StoreError.self) { try journal.begin(request("C0:54:45:00:00:07"), at: now, using: &random) }
        #expect(refusal?.code == .conflict)
        #expect(refusal?.reason.contains(first.uid) == true, "the refusal names the update in the way")
        _ = try journal.begin(request("C0:54:45:00:00:08"), at: now, using: &random)  // another device: fine
        try journal.finish(first.uid, .failed, message: "the device stopped answering", at: now.plus(milliseconds: 5), using: &random)
        let second = try journal.begin(request(), at: now.plus(milliseconds: 6), using: &random)
        #expect(second.uid != first.uid)
        #expect(try journal.history(address: "C0:54:45:00:00:07").map(\.uid) == [second.uid, first.uid])
    }

    @Test("the journal only moves forward: no phase back, no offset back, nothing after finished")
    func forwardOnly() throws {
        let journal = FirmwareUpdateJournal(database: try GatewayDatabase.inMemory())
        var random = SplitMix64(seed: 3)
        let update = try journal.begin(request(), at: now, using: &random)
        try journal.acknowledged(update.uid, offset: 8192, at: now)
        #expect(throws: StoreError.self) { try journal.acknowledged(update.uid, offset: 4096, at: now) }
        #expect(throws: StoreError.self) { try journal.acknowledged(update.uid, offset: 70_000, at: now) }
        // A device that rebooted forgot the partial upload: its smaller offset is followed when it says so.
        #expect(try journal.acknowledged(update.uid, offset: 0, resetTo: true, at: now).bytesAcknowledged == 0)
        try journal.advance(update.uid, to: .proving, at: now)
        #expect(throws: StoreError.self) { try journal.advance(update.uid, to: .testing, at: now) }
        #expect(throws: StoreError.self) { try journal.acknowledged(update.uid, offset: 100, at: now) }
        #expect(throws: StoreError.self) { try journal.advance(update.uid, to: .finished, at: now) }
        try journal.finish(update.uid, .reverted, message: "it runs 1.2.3+4", at: now, using: &random)
        let afterwards = #expect(throws: StoreError.self) { try journal.retried(update.uid, at: now) }
        #expect(afterwards?.code == .invalidRequest)
        #expect(try journal.update(uid: update.uid)?.outcome == .reverted)
        #expect((#expect(throws: StoreError.self) { try journal.retried("0190c0de-0000-7000-8000-000000000000", at: now) })?.code == .notFound)
    }

    @Test("an unfinished update outlives a reopen of the database, with its attempts counted")
    func survivesAReopen() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("gateway.sqlite")
        var random = SplitMix64(seed: 4)
        let uid: String
        do {
            let journal = FirmwareUpdateJournal(database: try GatewayDatabase(path: path))
            uid = try journal.begin(request(), at: now, using: &random).uid
            try journal.acknowledged(uid, offset: 32_768, at: now.plus(milliseconds: 100))
        }
        let journal = FirmwareUpdateJournal(database: try GatewayDatabase(path: path))
        let found = try #require(try journal.unfinished().first)
        #expect(found.uid == uid && found.phase == .uploading && found.bytesAcknowledged == 32_768)
        #expect(try journal.retried(uid, at: now.plus(milliseconds: 200)).attempts == 2)
    }

    @Test("the table's own checks hold whatever the code does: a finished row has an outcome and a time")
    func tableChecks() throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 5)
        let update = try FirmwareUpdateJournal(database: database).begin(request(), at: now, using: &random)
        #expect(throws: StoreError.self) {
            try database.write { db in
                try db.execute(sql: "UPDATE firmwareUpdate SET phase = 'finished' WHERE uid = ?", arguments: [update.uid])
            }
        }
        #expect(throws: StoreError.self) {
            try database.write { db in
                try db.execute(sql: "UPDATE firmwareUpdate SET bytesAcknowledged = imageBytes + 1 WHERE uid = ?", arguments: [update.uid])
            }
        }
    }
}

/// Rule 4: an update's end reaches the backend (the outbox) and the device registry (the peripheral's running image)
/// in the write that records it.
@Suite("Firmware update journal: a finished update is queued for the backend and recorded in the registry")
struct FirmwareUpdateOutcomeTests {
    let now = Timestamp(nanoseconds: 1_793_520_000_000_000_000)
    let address = "C0:54:45:00:00:07"

    func begin(_ journal: FirmwareUpdateJournal, using random: inout SplitMix64) throws -> FirmwareUpdateRecord {
        try journal.begin(
            FirmwareUpdateJournal.Request(
                address: address, imageVersion: "1.5.0+7", imageHash: Array(repeating: 0xAB, count: 32),
                uploadSha256: Array(repeating: 0xCD, count: 32), imageBytes: 25_232, imagePath: "/var/lib/tether/firmware/ab.img"),
            at: now, using: &random)
    }

    func queued(_ database: GatewayDatabase, uid: String) throws -> (OutboxCommandRecord, FirmwareUpdatePayload)? {
        let commands = try Outbox(database: database).commands(for: .firmwareUpdate(uid: uid))
        guard let command = commands.first else { return nil }
        #expect(commands.count == 1, "one command per finished update")
        return (command, try JSONDecoder().decode(FirmwareUpdatePayload.self, from: Data(command.payload.utf8)))
    }

    @Test("confirmed: one create the backend's rules accept, naming the Tether device's serial and the peripheral; the registry runs the image, confirmed")
    func confirmed() throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 11)
        try DeviceRegistry(database: database).recordAddress(address, serial: "TH-7", at: now, using: &random)
        let peripheral = try #require(try PeripheralRegistry(database: database).peripheral(identityAddress: address))
        let journal = FirmwareUpdateJournal(database: database)
        let update = try begin(journal, using: &random)
        #expect(try queued(database, uid: update.uid) == nil, "nothing goes to the backend while the update runs")
        try journal.advance(update.uid, to: .confirming, at: now.plus(milliseconds: 10))
        try journal.finish(update.uid, .confirmed, at: now.plus(milliseconds: 90_000), using: &random)

        let (command, payload) = try #require(try queued(database, uid: update.uid))
        #expect(command.operation == .create && command.entityId == update.uid)
        #expect(payload.problem == nil, "\(payload.problem ?? "")")
        #expect(payload.uid == update.uid && payload.address == address)
        #expect(payload.serial == "TH-7" && payload.peripheralUid == peripheral.uid)
        #expect(payload.imageVersion == "1.5.0+7" && payload.imageHash == String(repeating: "ab", count: 32) && payload.imageBytes == 25_232)
        #expect(payload.outcome == .confirmed && payload.message == nil && payload.attempts == 1)
        #expect(payload.startedAt == now.nanoseconds && payload.finishedAt == now.plus(milliseconds: 90_000).nanoseconds)

        let running = try #require(try PeripheralRegistry(database: database).peripheral(identityAddress: address)?.runningImage)
        #expect(running == PeripheralRecord.RunningImage(version: "1.5.0+7", hash: Data(repeating: 0xAB, count: 32), confirmed: true, updateUid: update.uid))
    }

    @Test("left in test, the registry says so; a revert or a failure changes nothing in it but is still queued, with its reason")
    func otherOutcomes() throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 12)
        try PeripheralRegistry(database: database).register(identityAddress: address, at: now, using: &random)
        let journal = FirmwareUpdateJournal(database: database)

        let inTest = try begin(journal, using: &random)
        try journal.finish(inTest.uid, .runningInTest, at: now.plus(milliseconds: 1), using: &random)
        #expect(try PeripheralRegistry(database: database).peripheral(identityAddress: address)?.runningImage?.confirmed == false)

        let reverted = try begin(journal, using: &random)
        try journal.finish(reverted.uid, .reverted, message: "came back on 1.4.2+0", at: now.plus(milliseconds: 2), using: &random)
        let failed = try begin(journal, using: &random)
        let longReason = String(repeating: "é", count: 600)
        try journal.finish(failed.uid, .failed, message: longReason, at: now.plus(milliseconds: 3), using: &random)
        #expect(try PeripheralRegistry(database: database).peripheral(identityAddress: address)?.runningImage?.updateUid == inTest.uid)

        let (_, revertPayload) = try #require(try queued(database, uid: reverted.uid))
        #expect(revertPayload.outcome == .reverted && revertPayload.message == "came back on 1.4.2+0")
        #expect(revertPayload.serial == nil, "not a Tether link device")
        let (_, failPayload) = try #require(try queued(database, uid: failed.uid))
        #expect(failPayload.problem == nil, "a long reason is cut to what the backend takes: \(failPayload.problem ?? "")")
        #expect(failPayload.message?.utf8.count == 1024)
    }

    @Test("a clock stepped back and a device's NUL-padded reason still make a record the backend takes")
    func clockBackAndNULs() throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 14)
        let journal = FirmwareUpdateJournal(database: database)
        let update = try begin(journal, using: &random)
        // Resumed after a reboot, before NTP set the clock: "now" is a day before the update began.
        try journal.finish(update.uid, .failed, message: "device: \u{0}\u{0}bad state\u{0}", at: now.plus(milliseconds: -86_400_000), using: &random)
        let (_, payload) = try #require(try queued(database, uid: update.uid))
        #expect(payload.problem == nil, "\(payload.problem ?? "")")
        #expect(payload.finishedAt == payload.startedAt)
        #expect(payload.message == "device:   bad state ")
    }

    @Test("an unknown device's update is queued without a serial or a peripheral uid")
    func unknownDevice() throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 13)
        let journal = FirmwareUpdateJournal(database: database)
        let update = try begin(journal, using: &random)
        try journal.finish(update.uid, .alreadyRunning, at: now.plus(milliseconds: 1), using: &random)
        let (_, payload) = try #require(try queued(database, uid: update.uid))
        #expect(payload.serial == nil && payload.peripheralUid == nil && payload.problem == nil)
    }
}

/// The journal's outcomes are the store's own vocabulary (its CHECK constraint), and the sync contract's are the
/// wire's: the two lists are held equal here, as `OutboxEntityTypeTests` holds the outbox's kinds and the contract's.
@Test("the journal's outcomes and the sync contract's FirmwareUpdateOutcome are the same words with the same meaning")
func firmwareUpdateOutcomesMatchTheContract() {
    #expect(FirmwareUpdateRecord.Outcome.allCases.map(\.rawValue) == FirmwareUpdateOutcome.allCases.map(\.rawValue))
    for outcome in FirmwareUpdateRecord.Outcome.allCases {
        #expect(outcome.deviceRunsImage == FirmwareUpdateOutcome(rawValue: outcome.rawValue)?.deviceRunsImage, "\(outcome)")
    }
}
