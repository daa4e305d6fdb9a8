import Foundation
import GRDB
import TetherPrimitives

/// The firmware update journal (migration v12): what tetherd's updates did, durably, so that an update cut by a
/// disconnect or a tetherd restart resumes where it was instead of starting over or being forgotten with a device
/// left on test (issue 16, "The update flow"). The rules it keeps:
/// 1. At most one unfinished update per device: `begin` refuses a second (`StoreError.conflict`).
/// 2. An update only moves forward: a phase before the current one, or any change after `finished`, is refused
///    (`StoreError.invalidRequest`), and the acknowledged offset never goes back within a phase of uploading except
///    when the device says so (`acknowledged(_:resetTo:)`: a device that rebooted forgot a partial upload).
/// 3. Every change is one durable write, made before the step it records is reported done.
/// 4. An update's end reaches the backend and the device registry in the write that records it: the `firmwareUpdate`
///    outbox command, and, when the device runs the image after it, the peripheral's `runningImage` (issue 16: "the
///    outcome and the new firmware version land in the device registry and reach the backend through the outbox").
public struct FirmwareUpdateJournal: Sendable {
    public let database: GatewayDatabase

    public init(database: GatewayDatabase) { self.database = database }

    /// What an update is asked to do.
    public struct Request: Hashable, Sendable {
        public var address: String
        public var imageVersion: String
        public var imageHash: [UInt8]
        public var uploadSha256: [UInt8]
        public var imageBytes: Int
        public var imagePath: String
        public var leaveInTest: Bool
        public var proveFor: Duration

        public init(
            address: String, imageVersion: String, imageHash: [UInt8], uploadSha256: [UInt8], imageBytes: Int, imagePath: String,
            leaveInTest: Bool = false, proveFor: Duration = .seconds(10)
        ) {
            self.address = address
            self.imageVersion = imageVersion
            self.imageHash = imageHash
            self.uploadSha256 = uploadSha256
            self.imageBytes = imageBytes
            self.imagePath = imagePath
            self.leaveInTest = leaveInTest
            self.proveFor = proveFor
        }
    }

    /// Rule 1: a new update, uploading, attempt 1.
    public func begin(_ request: Request, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> FirmwareUpdateRecord {
        let uid = UUIDv7.lowercaseString(UUIDv7.make(at: now, using: &random))
        let address = request.address.uppercased()
        return try database.write { db in
            if let running = try Self.unfinished(db, address: address) {
                throw StoreError(.conflict, "\(address) has an unfinished firmware update \(running.uid) (\(running.phase.rawValue))")
            }
            var record = FirmwareUpdateRecord(
                uid: uid, address: address, imageVersion: request.imageVersion, imageHash: Data(request.imageHash),
                uploadSha256: Data(request.uploadSha256), imageBytes: request.imageBytes, imagePath: request.imagePath,
                leaveInTest: request.leaveInTest, proveForMilliseconds: request.proveFor.components.seconds * 1000 + request.proveFor.components.attoseconds / 1_000_000_000_000_000, phase: .uploading,
                bytesAcknowledged: 0, attempts: 1, outcome: nil, message: nil, createdAt: now.nanoseconds,
                updatedAt: now.nanoseconds, finishedAt: nil)
            try record.insert(db)
            return record
        }
    }

    /// The device acknowledged the upload up to `offset` (rule 2). `resetTo`: the device answered a resumed upload
    /// with a smaller offset than the journal had (it rebooted and lost the partial upload): the journal follows it.
    @discardableResult
    public func acknowledged(_ uid: String, offset: Int, resetTo: Bool = false, at now: Timestamp) throws(StoreError) -> FirmwareUpdateRecord {
        try change(uid, at: now) { record in
            guard record.phase == .uploading else {
                throw StoreError(.invalidRequest, "update \(uid) is \(record.phase.rawValue), not uploading")
            }
            guard offset >= 0, offset <= record.imageBytes else {
                throw StoreError(.invalidRequest, "offset \(offset) is outside the image's \(record.imageBytes) bytes")
            }
            guard offset >= record.bytesAcknowledged || resetTo else {
                throw StoreError(.invalidRequest, "offset \(offset) is behind the acknowledged \(record.bytesAcknowledged)")
            }
            record.bytesAcknowledged = offset
        }
    }

    /// The update moved to `phase` (rule 2: forward only; not to `finished`, which `finish` records).
    @discardableResult
    public func advance(_ uid: String, to phase: FirmwareUpdateRecord.Phase, at now: Timestamp) throws(StoreError) -> FirmwareUpdateRecord {
        try change(uid, at: now) { record in
            guard phase != .finished else { throw StoreError(.invalidRequest, "an update finishes with an outcome") }
            guard phase >= record.phase else {
                throw StoreError(.invalidRequest, "update \(uid) is \(record.phase.rawValue); it cannot go back to \(phase.rawValue)")
            }
            if phase > .uploading { record.bytesAcknowledged = record.imageBytes }
            record.phase = phase
        }
    }

    /// Another attempt at an unfinished update (after a disconnect, or when tetherd starts again and finds it).
    @discardableResult
    public func retried(_ uid: String, at now: Timestamp) throws(StoreError) -> FirmwareUpdateRecord {
        try change(uid, at: now) { record in record.attempts += 1 }
    }

    /// The update ended with `outcome` (rule 4: with its outbox command and the registry's running image).
    @discardableResult
    public func finish(
        _ uid: String, _ outcome: FirmwareUpdateRecord.Outcome, message: String? = nil, at now: Timestamp,
        using random: inout some RandomNumberGenerator
    ) throws(StoreError) -> FirmwareUpdateRecord {
        let commandID = UUIDv7.make(at: now, using: &random)
        return try change(uid, at: now) { db, record in
            record.phase = .finished
            record.outcome = outcome
            // The backend takes at most 1024 bytes of it (SyncContract's FirmwareUpdatePayload).
            record.message = message.map { Self.truncated(Self.printable($0), toBytes: 1024) }
            // Never before the start: a clock stepped back (a resume after a reboot, before NTP) would otherwise
            // make a record the backend rejects (FirmwareUpdatePayload.problem) and the outbox dead-letters.
            record.finishedAt = max(now.nanoseconds, record.createdAt)
            let serial = try String.fetchOne(db, sql: "SELECT serial FROM device WHERE address = ?", arguments: [record.address])
            var peripheral = try PeripheralRegistry.fetch(db, identityAddress: record.address)
            if outcome.deviceRunsImage, var registered = peripheral {
                registered.runningImage = PeripheralRecord.RunningImage(
                    version: record.imageVersion, hash: record.imageHash, confirmed: outcome != .runningInTest, updateUid: record.uid)
                try registered.update(db)
                peripheral = registered
            }
            _ = try Outbox.enqueue(
                db, entity: .firmwareUpdate(uid: record.uid), operation: .create,
                payload: OutboxPayloads.firmwareUpdate(record, serial: serial, peripheralUid: peripheral?.uid), now: now, id: commandID)
        }
    }

    public func update(uid: String) throws(StoreError) -> FirmwareUpdateRecord? {
        try database.read { db in try FirmwareUpdateRecord.filter(FirmwareUpdateRecord.Columns.uid == uid).fetchOne(db) }
    }

    /// Updates not finished, oldest first: what tetherd resumes when it starts.
    public func unfinished() throws(StoreError) -> [FirmwareUpdateRecord] {
        try database.read { db in
            try FirmwareUpdateRecord.filter(FirmwareUpdateRecord.Columns.phase != FirmwareUpdateRecord.Phase.finished.rawValue)
                .order(FirmwareUpdateRecord.Columns.id).fetchAll(db)
        }
    }

    /// The latest `limit` updates, newest first; of one device when `address` is given.
    public func history(address: String? = nil, limit: Int = 50) throws(StoreError) -> [FirmwareUpdateRecord] {
        try database.read { db in
            var request = FirmwareUpdateRecord.all()
            if let address { request = request.filter(FirmwareUpdateRecord.Columns.address == address.uppercased()) }
            return try request.order(FirmwareUpdateRecord.Columns.id.desc).limit(max(limit, 0)).fetchAll(db)
        }
    }

    private static func unfinished(_ db: Database, address: String) throws -> FirmwareUpdateRecord? {
        try FirmwareUpdateRecord.filter(FirmwareUpdateRecord.Columns.address == address)
            .filter(FirmwareUpdateRecord.Columns.phase != FirmwareUpdateRecord.Phase.finished.rawValue).fetchOne(db)
    }

    /// Rule 2 around one change of an unfinished update, and rule 3: one write.
    private func change(
        _ uid: String, at now: Timestamp, _ body: @escaping (inout FirmwareUpdateRecord) throws -> Void
    ) throws(StoreError) -> FirmwareUpdateRecord {
        try change(uid, at: now) { _, record in try body(&record) }
    }

    private func change(
        _ uid: String, at now: Timestamp, _ body: @escaping (Database, inout FirmwareUpdateRecord) throws -> Void
    ) throws(StoreError) -> FirmwareUpdateRecord {
        try database.write { db in
            guard var record = try FirmwareUpdateRecord.filter(FirmwareUpdateRecord.Columns.uid == uid).fetchOne(db) else {
                throw StoreError(.notFound, "no firmware update \(uid)")
            }
            guard record.phase != .finished else {
                throw StoreError(.invalidRequest, "update \(uid) finished (\(record.outcome?.rawValue ?? "?")); it does not change")
            }
            try body(db, &record)
            record.updatedAt = max(record.updatedAt, now.nanoseconds)
            try record.update(db)
            return record
        }
    }

    /// `text` with its control characters (a device's padded NULs in an SMP `rsn`, say) as spaces: PostgreSQL's jsonb
    /// refuses U+0000, which would fail the whole push batch the record travels in.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
    }

    /// `text` cut to at most `limit` bytes of UTF-8, on a character boundary.
    static func truncated(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        for character in text {
            guard result.utf8.count + character.utf8.count <= limit else { break }
            result.append(character)
        }
        return result
    }
}
