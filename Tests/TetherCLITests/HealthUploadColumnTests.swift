import DBus
import TetherControlClient
import Testing
@testable import TetherCLI

/// `tether health samples`' UPLOAD column (issue 15): a technician sees why the backend refused a sample.
@Suite("tether health samples: the upload state, and a rejection's reason")
struct HealthUploadColumnTests {
    static func sample(state: String, reason: String? = nil) -> GatewayRecord {
        var fields: [String: DBusValue] = [
            "effective_at": .int64(1_793_520_000_000_000_000), "metric": .string("glucose"), "status": .string("number"),
            "value": .string("99"), "unit": .string("mg/dL"), "lane": .string("cold"), "upload_state": .string(state),
        ]
        if let reason { fields["rejected_reason"] = .string(reason) }
        return GatewayRecord(fields)
    }

    @Test("a rejected sample shows the server's reason; other states show themselves")
    func uploadColumn() {
        #expect(HealthTables.upload(Self.sample(state: "uploaded")) == "uploaded")
        #expect(HealthTables.upload(Self.sample(state: "failed")) == "failed")
        #expect(HealthTables.upload(Self.sample(state: "rejected", reason: "reported.unit is not UCUM")) == "rejected: reported.unit is not UCUM")
        let table = HealthTables.samples([Self.sample(state: "pending"), Self.sample(state: "rejected", reason: "time_basis is unknown")])
        #expect(table.contains("UPLOAD"))
        #expect(table.contains("rejected: time_basis is unknown"))
    }
}
