import TetherDeviceModel
import Foundation
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives
import TetherSettings

@Suite("Device settings: desired vs reported, three-way merge, apply on connect")
struct DeviceSettingsTests {
    struct MergeCase: CustomTestStringConvertible, Sendable {
        var name: String
        var base: UInt8?
        var desired: UInt8?
        var reported: UInt8?
        var hasBase = true
        var merged: UInt8?
        var conflict = false
        var testDescription: String { name }
    }

    @Test("the merge rule per setting", arguments: [
        MergeCase(name: "only the device changed it: take the device's", base: 5, desired: 5, reported: 3, merged: 3),
        MergeCase(name: "only desired changed it: take desired", base: 5, desired: 7, reported: 5, merged: 7),
        MergeCase(name: "both changed it alike", base: 5, desired: 7, reported: 7, merged: 7),
        MergeCase(name: "both changed it differently: conflict, the device keeps its value", base: 5, desired: 7, reported: 3, merged: 3, conflict: true),
        MergeCase(name: "desired has no opinion", base: 5, desired: nil, reported: 3, merged: nil),
        MergeCase(name: "the device does not report it", base: 5, desired: 7, reported: nil, merged: 7),
        MergeCase(name: "never synced: desired wins over the device's initial values", base: nil, desired: 7, reported: 3, hasBase: false, merged: 7),
        MergeCase(name: "the setting is new since the base", base: nil, desired: 7, reported: 3, merged: 3, conflict: true),
    ])
    func mergeRule(_ testCase: MergeCase) throws {
        let base = testCase.hasBase ? DeviceSettings(sensitivity: testCase.base, ledBrightness: 50) : nil
        let desired = DeviceSettings(sensitivity: testCase.desired, ledBrightness: 80)
        let reported = DeviceSettings(sensitivity: testCase.reported, ledBrightness: 50)
        let outcome = try SettingsMerge.merge(base: base, desired: desired, reported: reported, at: 1)
        #expect(outcome.settings.sensitivity == testCase.merged)
        #expect(outcome.settings.ledBrightness == 80)  // the untouched other setting merges independently
        #expect(outcome.conflicts.map(\.key) == (testCase.conflict ? [DeviceSettings.Key.sensitivity] : []))
        if testCase.conflict {
            #expect(outcome.conflicts.first?.desired == testCase.desired.map { [$0] })
            #expect(outcome.conflicts.first?.reported == testCase.reported.map { [$0] })
        }
    }

    @Test("unknown settings (a newer backend's keys) merge and conflict like known ones")
    func unknownKeys() throws {
        let base = try DeviceSettings(records: [SettingRecord(key: 42, value: [1, 2]), SettingRecord(key: 43, value: [1])])
        let desired = try DeviceSettings(records: [SettingRecord(key: 42, value: [9, 9]), SettingRecord(key: 43, value: [2])])
        let reported = try DeviceSettings(records: [SettingRecord(key: 42, value: [7, 7]), SettingRecord(key: 43, value: [1])])
        let outcome = try SettingsMerge.merge(base: base, desired: desired, reported: reported, at: 1)
        #expect(outcome.conflicts.map(\.key) == [42])
        #expect(SettingsMerge.values(of: outcome.settings) == [42: [7, 7], 43: [2]])
        #expect(outcome.conflicts.first?.description == "key42: base 513, desired 2313, reported 1799")
    }

    @Test("desired settings wait for the device's report, go out with SET_CONFIG, and are confirmed by the next report")
    func applyOnConnectAndConfirm() throws {
        let database = try GatewayDatabase.inMemory()
        let service = ConsumptionService(database: database)
        let settings = DeviceSettingsService(database: database)
        var random = SplitMix64(seed: 1)
        try store([.deviceInfo(deviceInfo("CFG"), negotiatedVersion: 1)], in: service)

        let change = try settings.changeDesired(serial: "CFG", to: DeviceSettings(sensitivity: 8), by: .backend, at: simulationStart, using: &random)
        #expect(change.configToApply == nil)  // the device has not reported yet: merge first, then send
        #expect(change.record.desiredChangedBy == .backend)

        let factory = DeviceConfig(version: 1, settings: DeviceSettings(sensitivity: 5, ledBrightness: 60))
        let report = try store([.reportedConfig(serial: "CFG", factory)], id: 2, in: service)
        let toApply = try #require(report.configToApply)
        #expect(toApply.settings.sensitivity == 8)
        #expect(toApply.version == 2)  // higher than anything the device reported

        // The device took it: CONFIG_DATA with the desired version confirms and becomes the base.
        let confirmed = DeviceConfig(version: toApply.version, settings: factory.settings.overlaid(with: toApply.settings))
        #expect(try store([.reportedConfig(serial: "CFG", confirmed)], id: 3, in: service).configToApply == nil)
        let record = try #require(try settings.settings(serial: "CFG"))
        #expect(record.isConfirmed)
        #expect(record.base == confirmed)
        #expect(try settings.configToApply(serial: "CFG") == nil)
    }

    @Test("a change on the device and a desired change of the same setting: the conflict is surfaced, the rest applied")
    func conflictIsSurfaced() throws {
        let database = try GatewayDatabase.inMemory()
        let service = ConsumptionService(database: database)
        let settings = DeviceSettingsService(database: database)
        var random = SplitMix64(seed: 2)
        let synced = DeviceConfig(version: 4, settings: DeviceSettings(sensitivity: 5, ledBrightness: 60, sleepTimeoutSeconds: 300))
        try store([.reportedConfig(serial: "C2", synced)], in: service)  // nothing desired: this is the base

        // Offline, the backend wants sensitivity 9 and LED 20; meanwhile a user set sensitivity 2 on the device.
        _ = try settings.changeDesired(serial: "C2", to: DeviceSettings(sensitivity: 9, ledBrightness: 20), by: .backend, at: simulationStart, using: &random)
        let local = DeviceConfig(version: 4, settings: DeviceSettings(sensitivity: 2, ledBrightness: 60, sleepTimeoutSeconds: 300))
        let outcome = try store([.reportedConfig(serial: "C2", local)], id: 2, in: service)
        let toApply = try #require(outcome.configToApply)
        #expect(toApply.settings.ledBrightness == 20)  // not in conflict: applied
        #expect(toApply.settings.sensitivity == 2)  // in conflict: the device keeps its value for now
        let record = try #require(try settings.settings(serial: "C2"))
        #expect(record.conflicts.map(\.name) == ["sensitivity"])
        let conflict = try #require(record.conflicts.first)
        #expect(conflict.base == [5] && conflict.desired == [9] && conflict.reported == [2])
        #expect(try settings.conflicts().map(\.serial) == ["C2"])
        // The backend hears about it through the outbox.
        let command = try #require(try Outbox(database: database).commands(for: .deviceSettings(serial: "C2")).last)
        #expect(command.payload.contains("\"conflicts\":[{"))

        // A technician decides for the backend's value: it goes out, and the conflict is gone.
        let resolved = try settings.resolveConflict(serial: "C2", key: DeviceSettings.Key.sensitivity, keep: .desired, by: .technician, at: simulationStart, using: &random)
        #expect(resolved.configToApply?.settings.sensitivity == 9)
        #expect(resolved.record.conflicts.isEmpty)
        #expect(throws: StoreError(.notFound, "")) {
            try settings.resolveConflict(serial: "C2", key: DeviceSettings.Key.sensitivity, keep: .desired, by: .technician, at: simulationStart, using: &random)
        }
    }

    @Test("invalid desired settings are refused before anything is stored")
    func invalidDesired() throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 3)
        #expect(throws: StoreError(.invalidRequest, "")) {
            try DeviceSettingsService(database: database).changeDesired(serial: "X", to: DeviceSettings(sensitivity: 11), by: .technician, at: simulationStart, using: &random)
        }
        #expect(try database.contents().devices.isEmpty)
    }

    @Test("end to end over the link: desired applied on connect with SET_CONFIG, confirmed by the device's report")
    func overTheLink() throws {
        let database = try GatewayDatabase.inMemory()
        var random = SplitMix64(seed: 4)
        _ = try DeviceSettingsService(database: database).changeDesired(serial: "TT-CFG", to: DeviceSettings(ledBrightness: 15, dailyLimit: 200), by: .technician, at: simulationStart, using: &random)
        var pair = try StoreLinkPair(profile: .v1_4(serial: "TT-CFG"), service: ConsumptionService(database: database))
        pair.run(for: .seconds(5))
        #expect(pair.configsApplied.count == 1)
        #expect(pair.firmware.config.settings.ledBrightness == 15)
        #expect(pair.firmware.config.settings.dailyLimit == 200)
        #expect(pair.firmware.config.settings.sensitivity == 5)  // untouched
        let record = try #require(try DeviceSettingsService(database: database).settings(serial: "TT-CFG"))
        #expect(record.isConfirmed)
        #expect(record.reported == pair.firmware.config)
        #expect(record.base == pair.firmware.config)
    }
}
