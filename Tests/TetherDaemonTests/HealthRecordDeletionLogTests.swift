import Logging
import Testing
import TetherGateway
@testable import TetherDaemon

/// tetherd's log of deletions on health devices (`[health] delete_acknowledged_records`): a deletion made is a
/// notice (the device's memory changed), a refusal or an interruption a warning, none made a debug line.
struct HealthRecordDeletionLogTests {
    static let address = "C0:54:45:00:00:03"

    static func report(_ outcome: HealthRecordDeletion.Outcome, through: UInt16?, reason: String?) -> GatewayTrace {
        .healthRecordDeletion(HealthRecordDeletion(
            address: address, service: "glucose", outcome: outcome, through: through, epoch: 0, reason: reason))
    }

    @Test func eachOutcomeAtItsLevel() {
        let (logger, lines) = DaemonLogHandlerTests().logger(journald: false, level: .debug)
        for event in [
            Self.report(.deleted, through: 12, reason: nil),
            Self.report(.refused, through: 12, reason: "unsupported(deleteStoredRecords, opCodeNotSupported)"),
            Self.report(.interrupted, through: 14, reason: "disconnected"),
            Self.report(.declined, through: nil, reason: "alreadyDeleted(through: 12)"),
            .wrote(address: Self.address, [0x54]),
        ] {
            TetherDaemon.logHealthRecordDeletion(event, to: logger)
        }
        let address = Self.address
        #expect(lines.all == [
            "NOTICE tetherd.test: deleted the device's acknowledged records address=\(address) epoch=0 service=glucose through=12\n",
            "WARNING tetherd.test: the device refused to delete records; not asked again on this link address=\(address) epoch=0 reason=unsupported(deleteStoredRecords, opCodeNotSupported) service=glucose through=12\n",
            "WARNING tetherd.test: deleting the device's acknowledged records did not finish address=\(address) epoch=0 reason=disconnected service=glucose through=14\n",
            "DEBUG tetherd.test: no records to delete from the device address=\(address) epoch=0 reason=alreadyDeleted(through: 12) service=glucose\n",
        ], "\(lines.all)")
    }
}

/// tetherd's log of the look for vanished records (`[health] audit_vanished_records`): records tombstoned are a
/// notice (readings deleted on the backend), an inconclusive look is info, intact, skipped and already deleted debug.
struct HealthRecordAuditLogTests {
    static let address = HealthRecordDeletionLogTests.address

    @Test func eachOutcomeAtItsLevel() {
        let (logger, lines) = DaemonLogHandlerTests().logger(journald: false, level: .debug)
        for report in [
            HealthRecordAudit(address: Self.address, service: "glucose", outcome: .vanished, epoch: 0, keys: [5, 9], tombstones: 4),
            HealthRecordAudit(address: Self.address, service: "glucose", outcome: .inconclusive, epoch: 1, reason: "budgetExhausted(requests: 64)"),
            HealthRecordAudit(address: Self.address, service: "glucose", outcome: .intact, epoch: 0),
            HealthRecordAudit(address: Self.address, service: "glucose", outcome: .nothingToDelete, epoch: 0, keys: [7]),
        ] {
            TetherDaemon.logHealthRecordAudit(.healthRecordAudit(report), to: logger)
        }
        TetherDaemon.logHealthRecordAudit(.wrote(address: Self.address, [0x54]), to: logger)
        let address = Self.address
        #expect(lines.all == [
            "NOTICE tetherd.test: records vanished from the device; their samples are deleted address=\(address) epoch=0 records=5,9 service=glucose tombstones=4\n",
            "INFO tetherd.test: could not tell whether records vanished from the device address=\(address) epoch=1 reason=budgetExhausted(requests: 64) service=glucose\n",
            "DEBUG tetherd.test: no records vanished from the device address=\(address) epoch=0 service=glucose\n",
            "DEBUG tetherd.test: records gone from the device with no sample left to delete address=\(address) epoch=0 records=7 service=glucose tombstones=0\n",
        ], "\(lines.all)")
    }
}
