import Foundation
import LinkProtocol
import SyncContract
import Testing
import TetherSettings

@Suite("the wire contract: checksum, cursor, entity ids, push bodies")
struct ContractTests {
    @Test("the page checksum matches the spec's worked example line by line")
    func checksumLines() throws {
        let device = Change(
            kind: .device, operation: .upsert, serial: "TH-1", version: 2,
            device: DevicePayload(serial: "TH-1", hardwareRevision: 3, firmwareVersion: nil, protocolVersion: 1, capabilities: 5, pairingState: .paired))
        #expect(PageChecksum.canonicalLine(device) == "device\tupsert\tTH-1\t2\t3\t\\0\t1\t5\tpaired\n")
        let settings = Change(
            kind: .deviceSettings, operation: .upsert, serial: "TH-1", version: 4,
            settings: .init(desired: SettingsDocument(sensitivity: 7, sleepTimeoutSeconds: 300), changedBy: .backend))
        #expect(PageChecksum.canonicalLine(settings) == "deviceSettings\tupsert\tTH-1\t4\tbackend\t1:07,4:2c01\n")
        let deletion = Change(kind: .device, operation: .delete, serial: "a\tb\\c", version: 9)
        #expect(PageChecksum.canonicalLine(deletion) == "device\tdelete\ta\\tb\\\\c\t9\n")
        #expect(PageChecksum.checksum(of: []) == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // `printf 'device\tupsert…paired\ndeviceSettings\tupsert…2c01\n' | sha256sum`, computed apart from this code.
        #expect(PageChecksum.checksum(of: [device, settings]) == "sha256:6fbb219b51d1325670d97e282c56cf29514d08e7b8729465d04b820bbd5ce70f")
    }

    /// docs/specs/sync-api.yaml, "Page checksum": a healthSample delete's line, its serial absent (`\0`).
    @Test("a health sample deleted by the backend: its checksum line, and the rules a gateway checks before applying it")
    func healthSampleChange() throws {
        let tombstone = HealthDeletionUpload(
            uid: "01890a5d-ac96-774b-bcce-b302099a8201", sampleUid: "01890a5d-ac96-774b-bcce-b302099a8101", reason: "backend", requestedBy: "backend",
            replacementSampleUid: nil, note: nil, requestedAt: 1_793_700_000_000_000_000, sampleDedupKey: "bls/periph-1/7/150021/0")
        let change = Change.healthSampleDeleted(tombstone)
        #expect(change.problem == nil)
        let line = PageChecksum.canonicalLine(change)
        #expect(
            line == "healthSample\tdelete\t\\0\t1\t01890a5d-ac96-774b-bcce-b302099a8201\t01890a5d-ac96-774b-bcce-b302099a8101\tbackend\tbackend\t\\0\t"
                + "1793700000000000000\tbls/periph-1/7/150021/0\n")
        // `printf 'healthSample\tdelete\t\\0\t1\t…\tbls/periph-1/7/150021/0\n' | sha256sum`, computed apart from this code.
        #expect(PageChecksum.checksum(of: [change]) == "sha256:1a70f5295fb9c471e183c7b0becb40b6b82db5df6ebae42d7f79556e9e790a05")
        // On the wire: no serial key at all, and the tombstone under health_deletion.
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(change)) as? [String: Any])
        #expect(json["serial"] == nil)
        #expect((json["health_deletion"] as? [String: Any])?["sample_dedup_key"] as? String == "bls/periph-1/7/150021/0")
        #expect(try JSONDecoder().decode(Change.self, from: JSONEncoder().encode(change)) == change)

        var noted = tombstone
        noted.note = "x"
        #expect(PageChecksum.canonicalLine(.healthSampleDeleted(noted)) != line, "the note is covered")
        func problem(_ edit: (inout Change) -> Void) -> String? {
            var changed = change
            edit(&changed)
            return changed.problem
        }
        #expect(problem { $0.serial = "TH-1" } != nil, "a serial")
        #expect(problem { $0.version = 2 } != nil, "deleted twice")
        #expect(problem { $0.operation = .upsert } != nil)
        #expect(problem { $0.healthDeletion = nil } != nil)
        #expect(problem { $0.healthDeletion?.reason = "technician" } != nil, "another author's tombstone")
        #expect(problem { $0.healthDeletion?.uid = tombstone.uid.uppercased() } != nil, "the feed's uids are lowercase")
        #expect(problem { $0.healthDeletion?.note = "" } != nil)
        #expect(problem { $0.healthDeletion?.note = String(repeating: "é", count: 1001) } != nil)
        #expect(problem { $0.healthDeletion?.note = String(repeating: "é", count: 1000) } == nil)
        #expect(problem { $0.healthDeletion?.replacementSampleUid = tombstone.sampleUid } != nil)
        #expect(Change(kind: .device, operation: .delete, serial: nil, version: 1).problem != nil, "a device change names its serial")
        #expect(Change(kind: .device, operation: .delete, serial: "TH-1", version: 1, healthDeletion: tombstone).problem != nil)
    }

    @Test("a changed field changes the checksum")
    func checksumSensitivity() {
        let base = Change(kind: .device, operation: .upsert, serial: "TH-1", version: 1, device: DevicePayload(serial: "TH-1", pairingState: .paired))
        var changed = base
        changed.device?.pairingState = .blocked
        var reordered = [base, Change(kind: .device, operation: .delete, serial: "TH-2", version: 2)]
        #expect(PageChecksum.checksum(of: [base]) != PageChecksum.checksum(of: [changed]))
        let forward = PageChecksum.checksum(of: reordered)
        reordered.reverse()
        #expect(PageChecksum.checksum(of: reordered) != forward)
    }

    @Test("cursors are opaque tokens of sequence numbers and compare by sequence")
    func cursors() {
        #expect(SyncCursor(sequence: 42).token == "c1.42")
        #expect(SyncCursor(token: "c1.42") == SyncCursor(sequence: 42))
        #expect(SyncCursor(token: "c1.0") == .start)
        for bad in ["", "c1.", "c1.-3", "c1.007", "c1.1e3", "C1.5", "c1.99999999999999999999", "c1. 5"] {
            #expect(SyncCursor(token: bad) == nil, "\(bad)")
        }
        #expect(SyncCursor(sequence: 9) < SyncCursor(sequence: 10))
    }

    @Test("entity ids split from the right, serials with slashes included")
    func entityIDs() {
        #expect(EntityIdentity(type: .consumptionEvent, id: "a/b/7/42") == .consumptionEvent(serial: "a/b", bootCounter: 7, sequence: 42))
        #expect(EntityIdentity(type: .deviceTelemetry, id: "X/battery/100") == .deviceTelemetry(serial: "X", kind: .battery, receivedAt: 100))
        #expect(EntityIdentity(type: .consumptionEvent, id: "X/70000/1") == nil)
        #expect(EntityIdentity(type: .device, id: String(repeating: "x", count: 33)) == nil)
        #expect(EntityIdentity(type: .device, id: "bad\u{7}") == nil)
    }

    @Test("the raw-payload push writer produces what PushRequest decodes")
    func pushWriter() throws {
        var writer = PushRequestWriter()
        let id = UUID()
        writer.append(
            id: id, entityType: "device", entityID: "T\"H\n1", operation: "update",
            payloadJSON: #"{"serial":"T\"H\n1","capabilities":1,"pairingState":"paired"}"#, baseVersion: nil)
        writer.append(id: UUID(), entityType: "deviceSettings", entityID: "S", operation: "update", payloadJSON: #"{"serial":"S"}"#, baseVersion: 4)
        let request = try JSONDecoder().decode(PushRequest.self, from: Data(writer.finish()))
        #expect(request.commands.count == 2)
        #expect(request.commands[0].id == id)
        #expect(request.commands[0].entityID == "T\"H\n1")
        #expect(request.commands[0].payload == .device(DevicePayload(serial: "T\"H\n1", capabilities: 1, pairingState: .paired)))
        #expect(request.commands[1].baseVersion == 4)
        #expect(try JSONDecoder().decode(PushRequest.self, from: Data(PushRequestWriter().finish())).commands.isEmpty)
    }

    @Test("settings documents validate §7.11 and round-trip with the store's DeviceSettings JSON")
    func settingsDocuments() throws {
        let settings = DeviceSettings(sensitivity: 3, ledBrightness: 50, hapticFeedback: true, sleepTimeoutSeconds: 600, dailyLimit: 20)
        let document = try JSONDecoder().decode(SettingsDocument.self, from: JSONEncoder().encode(settings))
        #expect(try document.settings() == settings)
        #expect(SettingsDocument(sensitivity: 0).problem != nil)
        #expect(SettingsDocument(sleepTimeoutSeconds: 70000).problem != nil)
        #expect(SettingsDocument(unknown: [.init(key: 3, value: [1])]).problem != nil)
        #expect(SettingsDocument(unknown: [.init(key: 9, value: [1, 2])]).problem == nil)
        #expect(try JSONDecoder().decode(SettingsDocument.self, from: Data("{}".utf8)) == SettingsDocument())
    }

    @Test("ETag fields: lists, weak tags and *")
    func etags() {
        #expect(EntityTag.versions(in: "\"3\"") == [3])
        #expect(EntityTag.versions(in: " W/\"3\" , \"5\"") == [3, 5])
        #expect(EntityTag.versions(in: "*") == nil)
        #expect(EntityTag.versions(in: "\"abc\"") == [])
    }
}
