import DBus
import Foundation
import HealthDeviceModel
import Testing
import TetherTestSupport

/// The change lane by hand (issue 15, item 2; docs/specs/control-api.md, "Health deletion"): a technician deletes and
/// corrects a cuff's stored readings through a real tetherd, and filters the samples by metric, against tether-sim's
/// blood pressure cuff on a private bus.
@Suite(.serialized) struct HealthChangeControlTests {
    static let cuff = HealthControlTests.cuff

    static func samples(_ bed: DaemonTestBed, _ query: [String: DBusValue] = [:], device: String = cuff) async throws -> [[String: DBusValue]] {
        try await HealthControlTests.samples(bed, device, query: query)
    }

    static func call(_ bed: DaemonTestBed, _ method: String, _ arguments: [DBusValue]) async throws -> [String: DBusValue] {
        let reply = try await bed.client.call(method, arguments)
        return try #require(reply.first?.variantDictionaryValue, "\(method) answered \(reply)")
    }

    /// Out of line on purpose: the same `filter` written inline in the test's async body returned [] under Swift
    /// 6.3.1 (debug) while `count(where:)` with the same closure counted 2.
    static func withStatus(_ status: String, _ samples: [[String: DBusValue]]) -> [[String: DBusValue]] {
        samples.filter { $0["status"]?.stringValue == status }
    }

    func expectError(_ name: String, _ body: () async throws -> Void) async {
        await HealthControlTests().expectError(name, body)
    }

    /// Three stored readings, the first a failed measurement (NaN): each is four samples (systolic, diastolic, mean,
    /// pulse). Filters by metric narrow the list; a deletion tombstones one sample (listed with `include_deleted`,
    /// and in `ListHealthDeletions`, pending upload); a correction replaces another with a change-lane sample of the
    /// new value and tombstones the original naming it; every refusal says why and changes nothing.
    @Test(.timeLimit(.minutes(4)))
    func aTechnicianDeletesAndCorrectsACuffsReadings() async throws {
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 3
        cuff.faults.specialValues = [SpecialValueFault(measurement: 1, value: .nan)]
        try await HealthControlTests.with([cuff]) { bed in
            try await bed.startDaemon()
            _ = try await bed.pair(Self.cuff)
            try await waitUntil("the cuff's three stored readings; log:\n\(bed.daemon?.logText ?? "")", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, ["metric": .string("blood_pressure_systolic")]).count == 3
            }

            // Filters: by metric name and by MDC code; a metric the device never sent; refusals by name.
            let all = try await Self.samples(bed)
            let systolic = try await Self.samples(bed, ["metric": .string("blood_pressure_systolic")])
            #expect(systolic.count == 3 && systolic.allSatisfy { $0["metric_code"]?.uint32Value == 150_021 })
            #expect(all.count > systolic.count)
            #expect(try await Self.samples(bed, ["metric_code": .uint32(150_022)]).allSatisfy { $0["metric"]?.stringValue == "blood_pressure_diastolic" })
            #expect(try await Self.samples(bed, ["metric": .string("glucose")]).isEmpty)
            #expect(try await Self.samples(bed, device: "").count == all.count, "\"\" is every health device")
            await expectError("InvalidArgument") { _ = try await Self.samples(bed, ["metric": .string("blood_sugar")]) }
            await expectError("InvalidArgument") { _ = try await Self.samples(bed, ["metrics": .string("glucose")]) }
            await expectError("InvalidArgument") { _ = try await Self.samples(bed, ["since": .string("yesterday")]) }

            let failed = try #require(systolic.first { $0["status"]?.stringValue == "nan" }, "\(systolic)")
            let numbers = Self.withStatus("number", systolic)
            let (toDelete, toCorrect) = (try #require(numbers.first, "\(systolic)"), try #require(numbers.last))
            let deleteUid = try #require(toDelete["uid"]?.stringValue)
            let correctUid = try #require(toCorrect["uid"]?.stringValue)
            #expect(deleteUid != correctUid)

            // Delete: the tombstone answers; the sample leaves the list and stays with include_deleted.
            let deletion = try await Self.call(bed, "DeleteHealthSample", [.string(deleteUid.uppercased()), .string("taken on the wrong arm")])
            #expect(deletion["sample_uid"]?.stringValue == deleteUid && deletion["reason"]?.stringValue == "technician")
            #expect(deletion["requested_by"]?.stringValue == "technician" && deletion["note"]?.stringValue == "taken on the wrong arm")
            #expect(deletion["upload_state"]?.stringValue == "pending" && deletion["address"]?.stringValue == Self.cuff)
            #expect(deletion["replacement_uid"] == nil)
            #expect(!(try await Self.samples(bed)).contains { $0["uid"]?.stringValue == deleteUid })
            let kept = try #require(try await Self.samples(bed, ["include_deleted": .bool(true)]).first { $0["uid"]?.stringValue == deleteUid })
            #expect(kept["deleted_at"]?.int64Value == deletion["requested_at"]?.int64Value)
            await expectError("NotPermitted") { _ = try await Self.call(bed, "DeleteHealthSample", [.string(deleteUid), .string("")]) }
            await expectError("UnknownSample") {
                _ = try await Self.call(bed, "DeleteHealthSample", [.string("0190c4d2-0000-7000-8000-000000000000"), .string("")])
            }

            // Refused corrections: a NaN has no value to correct; nothing new; a user index no person has; junk.
            let failedUid = try #require(failed["uid"]?.stringValue)
            await expectError("InvalidArgument") {
                _ = try await Self.call(bed, "CorrectHealthSample", [.string(failedUid), .variantDictionary(["value": .string("120")]), .string("")])
            }
            let sameValue = try #require(toCorrect["value"]?.stringValue)
            await expectError("InvalidArgument") {
                _ = try await Self.call(bed, "CorrectHealthSample", [.string(correctUid), .variantDictionary(["value": .string(sameValue + ".0")]), .string("")])
            }
            await expectError("InvalidArgument") {
                _ = try await Self.call(bed, "CorrectHealthSample", [.string(correctUid), .variantDictionary(["user_index": .uint32(255)]), .string("")])
            }
            await expectError("InvalidArgument") {
                _ = try await Self.call(bed, "CorrectHealthSample", [.string(correctUid), .variantDictionary(["value": .string("1e2")]), .string("")])
            }
            await expectError("InvalidArgument") {
                _ = try await Self.call(bed, "CorrectHealthSample", [.string(correctUid), .variantDictionary(["unit": .string("kPa")]), .string("")])
            }
            #expect(try await Self.samples(bed, ["metric": .string("blood_pressure_systolic")]).count == 2, "refusals change nothing")

            // Correct: a new value in the sample's unit, and user 1.
            let correctedValue = String((Int(sameValue) ?? 100) + 7)
            let correction = try await Self.call(bed, "CorrectHealthSample", [
                .string(correctUid), .variantDictionary(["value": .string(correctedValue), "user_index": .uint32(1)]), .string("re-measured"),
            ])
            #expect(correction["sample_uid"]?.stringValue == correctUid && correction["reason"]?.stringValue == "correction")
            let replacementUid = try #require(correction["replacement_uid"]?.stringValue)
            let now = try await Self.samples(bed, ["metric": .string("blood_pressure_systolic")])
            #expect(!now.contains { $0["uid"]?.stringValue == correctUid })
            let replacement = try #require(now.first { $0["uid"]?.stringValue == replacementUid }, "\(now)")
            #expect(replacement["value"]?.stringValue == correctedValue && replacement["unit"]?.stringValue == toCorrect["unit"]?.stringValue)
            #expect(replacement["canonical_value"]?.stringValue == correctedValue, "mm[Hg] is canonical")
            #expect(replacement["lane"]?.stringValue == "change" && replacement["user_index"]?.uint32Value == 1)
            #expect(replacement["raw"] == nil, "no device sent the correction")
            #expect(replacement["effective_at"]?.int64Value == toCorrect["effective_at"]?.int64Value)
            #expect(replacement["sequence"]?.int64Value == toCorrect["sequence"]?.int64Value)
            // The replacement may be corrected in turn; the original may not be corrected again.
            await expectError("NotPermitted") {
                _ = try await Self.call(bed, "CorrectHealthSample", [.string(correctUid), .variantDictionary(["user_index": .uint32(2)]), .string("")])
            }

            let deletions = try await bed.client.records("ListHealthDeletions", [.string(Self.cuff), .uint32(0)])
            #expect(deletions.map { $0["sample_uid"]?.stringValue } == [deleteUid, correctUid])
            #expect(deletions.last?["replacement_uid"]?.stringValue == replacementUid)
            #expect(try await bed.client.records("ListHealthDeletions", [.string(""), .uint32(1)]).count == 1)
            await expectError("UnknownDevice") { _ = try await bed.client.records("ListHealthDeletions", [.string("C0:54:45:00:00:99"), .uint32(0)]) }
            try await bed.stopDaemon()
        }
    }
}
