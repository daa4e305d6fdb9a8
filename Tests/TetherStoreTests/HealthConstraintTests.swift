import Foundation
import GRDB
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("Health tables: the constraints refuse bad rows whatever code writes them; exact decimals")
struct HealthConstraintTests {
    /// A valid sample row's columns; each case below breaks one rule.
    static let valid: [String: String] = [
        "uid": "'0190a000-0000-7000-8000-000000000001'", "dedupKey": "'k'", "peripheralId": "1",
        "characteristic": "'00002a18-0000-1000-8000-00805f9b34fb'", "metricCode": "160368", "occurrence": "0",
        "valueStatus": "'number'", "reportedMantissa": "100", "reportedExponent": "-5", "reportedUnit": "'kg/L'",
        "canonicalValue": "'100'", "canonicalUnit": "'mg/dL'", "effectiveAt": "1", "deviceTime": "'2026-11-01T07:00:00'",
        "timeBasis": "'local-time-with-offset'", "epoch": "0", "lane": "'cold'", "rawBytes": "x'02'", "parserVersion": "1", "receivedAt": "1",
    ]

    static func insert(_ changes: [String: String]) -> String {
        let row = valid.merging(changes) { $1 }
        let columns = row.keys.sorted()
        return "INSERT INTO healthSample (\(columns.joined(separator: ", "))) VALUES (\(columns.map { row[$0]! }.joined(separator: ", ")))"
    }

    static let badSamples: [(String, [String: String])] = [
        ("a number without its value", ["reportedMantissa": "NULL", "reportedExponent": "NULL"]),
        ("NaN with a value", ["valueStatus": "'nan'", "canonicalValue": "NULL"]),
        ("a number without its canonical value", ["canonicalValue": "NULL"]),
        ("an unknown value status", ["valueStatus": "'infinite'"]),
        ("a canonical value in exponent notation", ["canonicalValue": "'1e5'"]),
        ("a canonical value ending in a point", ["canonicalValue": "'12.'"]),
        ("a canonical value with two points", ["canonicalValue": "'1.2.3'"]),
        ("a canonical value with an inner minus", ["canonicalValue": "'1-2'"]),
        ("an exponent beyond FLOAT's", ["reportedExponent": "128"]),
        ("a device-time basis without the device time", ["deviceTime": "NULL"]),
        ("an unknown time basis", ["timeBasis": "'sundial'"]),
        ("a hot or cold sample without raw bytes", ["rawBytes": "NULL"]),
        ("a cold sample without parser version", ["parserVersion": "NULL"]),
        ("an unknown lane", ["lane": "'warm'"]),
        ("a 16-bit characteristic", ["characteristic": "'2a18'"]),
        ("an upper-case characteristic", ["characteristic": "'00002A18-0000-1000-8000-00805F9B34FB'"]),
        ("a user index beyond a byte", ["userIndex": "256"]),
        ("a negative sequence", ["recordSequence": "-1"]),
        ("metric code 0", ["metricCode": "0"]),
        ("an unknown peripheral", ["peripheralId": "99"]),
        ("leased without an expiry", ["uploadState": "'leased'", "uploadRequestId": "'0190a000-0000-7000-8000-0000000000aa'", "uploadAttempts": "1"]),
        ("uploaded without a request id", ["uploadState": "'uploaded'", "uploadAttempts": "1"]),
        ("rejected without a reason", ["uploadState": "'rejected'", "uploadAttempts": "1"]),
        ("failed without an attempt", ["uploadState": "'failed'"]),
        ("a reason without rejection", ["rejectedReason": "'why'"]),
    ]

    @Test("a valid row is accepted, and each broken rule refused", arguments: badSamples)
    func sampleConstraints(_ name: String, _ changes: [String: String]) throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 1)
        try PeripheralRegistry(database: database).register(identityAddress: "C4:00:00:00:00:01", at: simulationStart, using: &random)
        #expect(throws: StoreError(.constraint, ""), "\(name)") { try database.write { db in try db.execute(sql: Self.insert(changes)) } }
        // The same statement without the broken rule passes: the case tests what it names.
        try database.write { db in try db.execute(sql: Self.insert([:])) }
        try database.write { db in
            try db.execute(sql: Self.insert(["uid": "'0190a000-0000-7000-8000-000000000002'", "dedupKey": "'k2'", "valueStatus": "'nres'", "reportedMantissa": "NULL", "reportedExponent": "NULL", "canonicalValue": "NULL"]))
            try db.execute(sql: Self.insert(["uid": "'0190a000-0000-7000-8000-000000000003'", "dedupKey": "'k3'", "canonicalValue": "'-0.05'", "timeBasis": "'receipt'", "deviceTime": "NULL", "userIndex": "255"]))
        }
    }

    @Test("tombstones: reason and author agree, a correction names its replacement, a sample is deleted once")
    func deletionConstraints() throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 1)
        try PeripheralRegistry(database: database).register(identityAddress: "C4:00:00:00:00:01", at: simulationStart, using: &random)
        try database.write { db in
            try db.execute(sql: Self.insert([:]))
            try db.execute(sql: Self.insert(["uid": "'0190a000-0000-7000-8000-000000000002'", "dedupKey": "'k2'", "lane": "'change'", "rawBytes": "NULL", "parserVersion": "NULL"]))
        }
        func deletion(_ values: String) -> String {
            "INSERT INTO healthDeletion (uid, sampleId, reason, requestedBy, replacementSampleId, requestedAt) VALUES ('0190a000-0000-7000-8000-0000000000d1', \(values), 1)"
        }
        for bad in [
            "1, 'technician', 'backend', NULL", "1, 'vanished-from-device', 'technician', NULL", "1, 'correction', 'backend', NULL",
            "1, 'technician', 'technician', 2", "1, 'correction', 'gateway', 2", "1, 'correction', 'backend', 1", "1, 'forgotten', 'gateway', NULL",
            "7, 'technician', 'technician', NULL",
        ] {
            #expect(throws: StoreError(.constraint, ""), "\(bad)") { try database.write { db in try db.execute(sql: deletion(bad)) } }
        }
        try database.write { db in try db.execute(sql: deletion("1, 'correction', 'technician', 2")) }
        #expect(throws: StoreError(.constraint, "")) {
            try database.write { db in try db.execute(sql: deletion("1, 'backend', 'backend', NULL").replacingOccurrences(of: "d1'", with: "d2'")) }
        }
    }

    @Test("decimals: parsed and printed exactly, never through binary floating point")
    func decimals() {
        let cases: [(String, Int64, Int32)] = [("120", 120, 0), ("-0.05", -5, -2), ("98.60", 9860, -2), ("0.005", 5, -3), ("0", 0, 0)]
        for (text, mantissa, exponent) in cases {
            #expect(HealthDecimal(text) == HealthDecimal(mantissa: mantissa, exponent: exponent), "\(text)")
            #expect(HealthDecimal(mantissa: mantissa, exponent: exponent).description == text)
        }
        #expect(HealthDecimal(mantissa: 12, exponent: 2).description == "1200")
        #expect(HealthDecimal(mantissa: -1205, exponent: -1).description == "-120.5")
        for bad in ["", "-", ".5", "5.", "1e3", "+1", "1.2.3", "1 2", "99999999999999999999", "٣"] {
            #expect(HealthDecimal(bad) == nil, "\(bad)")
        }
    }

    @Test("the cursor rule, case by case")
    func cursorRule() {
        let stream = HealthRecordStream(characteristic: HealthCharacteristic.glucose, userIndex: 2)
        func move(_ epoch: Int64, _ position: Int64?, _ reason: HealthEpochReason? = nil, kind: HealthCursorKind = .sequence) -> HealthCursorMove {
            HealthCursorMove(stream: stream, kind: kind, epoch: epoch, position: position, epochReason: reason)
        }
        let at5 = HealthCursorRule.Stored(epoch: 3, kind: .sequence, position: 5)
        let empty = HealthCursorRule.Stored(epoch: 3, kind: .sequence, position: nil)
        let cases: [(HealthCursorRule.Stored?, HealthCursorMove, Result<HealthCursorRule.Decision, HealthStoreError>)] = [
            (nil, move(0, 4), .success(.start)),
            (nil, move(0, nil), .success(.start)),
            (nil, move(1, 4, .sequenceReset), .failure(.epochSkipped(stream, expected: 0, requested: 1))),
            (at5, move(3, 6), .success(.advance(from: 5, to: 6))),
            (at5, move(3, 5), .success(.unchanged)),
            (at5, move(3, 4), .failure(.cursorMovedBackwards(stream, epoch: 3, stored: 5, requested: 4))),
            (at5, move(3, nil), .failure(.cursorMovedBackwards(stream, epoch: 3, stored: 5, requested: nil))),
            (empty, move(3, nil), .success(.unchanged)),
            (empty, move(3, 0), .success(.advance(from: nil, to: 0))),
            (at5, move(2, 9), .failure(.epochMovedBackwards(stream, stored: 3, requested: 2))),
            (at5, move(4, 1, .sequenceReset), .success(.newEpoch(4, reason: .sequenceReset))),
            (at5, move(4, nil, .sessionRestarted), .success(.newEpoch(4, reason: .sessionRestarted))),
            (at5, move(4, 1), .failure(.epochReasonMissing(stream, epoch: 4))),
            (at5, move(4, 1, .first), .failure(.epochReasonMissing(stream, epoch: 4))),
            (at5, move(5, 1, .sequenceReset), .failure(.epochSkipped(stream, expected: 4, requested: 5))),
            (at5, move(3, 6, kind: .timeOffset), .failure(.cursorKindChanged(stream, stored: .sequence, requested: .timeOffset))),
        ]
        for (stored, requested, expected) in cases {
            #expect(HealthCursorRule.decide(stored: stored, move: requested) == expected, "\(String(describing: stored)) + \(requested)")
        }
    }
}
