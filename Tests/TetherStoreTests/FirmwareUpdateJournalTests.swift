import Foundation
import GRDB
import Testing
@testable import TetherStore
import TetherPrimitives

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
        let done = try journal.finish(begun.uid, .confirmed, at: now.plus(milliseconds: 60))
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
        try journal.finish(first.uid, .failed, message: "the device stopped answering", at: now.plus(milliseconds: 5))
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
        try journal.finish(update.uid, .reverted, message: "it runs 1.2.3+4", at: now)
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
