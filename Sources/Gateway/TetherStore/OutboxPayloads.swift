import Foundation
import LinkProtocol
import TetherPrimitives
import TetherSettings

/// The JSON bodies of outbox commands: each entity's full state (create, update) or identity (delete), in the
/// shape the backend API takes. Event payloads sit on the ingest hot path, so they are written directly rather
/// than through `JSONEncoder` (an order of magnitude slower for these flat objects).
enum OutboxPayloads {
    static func event(_ key: EventKey, ticks: Int64, time: TimeEstimate?, durationMilliseconds: UInt16, intensity: UInt8, receivedAt: Int64) -> String {
        var json = JSONObjectWriter()
        json.add("serial", key.serial)
        json.add("bootCounter", Int64(key.bootCounter))
        json.add("sequence", key.sequence)
        json.add("ticks", ticks)
        json.add("utcNanoseconds", time?.utcNanoseconds)
        json.add("uncertaintyNanoseconds", time?.uncertaintyNanoseconds)
        json.add("durationMilliseconds", Int64(durationMilliseconds))
        json.add("intensity", Int64(intensity))
        json.add("receivedAt", receivedAt)
        return json.finish()
    }

    static func device(_ device: DeviceRecord) -> String {
        var json = JSONObjectWriter()
        json.add("serial", device.serial)
        json.add("hardwareRevision", device.hardwareRevision.map(Int64.init))
        json.add("firmwareVersion", device.firmwareVersion)
        json.add("protocolVersion", device.protocolVersion.map(Int64.init))
        json.add("capabilities", Int64(device.capabilities))
        json.add("pairingState", device.pairingState.rawValue)
        return json.finish()
    }

    /// SyncContract's `FirmwareUpdatePayload`: a finished update, the device named by what the gateway knows of it.
    static func firmwareUpdate(_ record: FirmwareUpdateRecord, serial: String?, peripheralUid: String?) -> String {
        var json = JSONObjectWriter()
        json.add("uid", record.uid)
        json.add("address", record.address)
        json.add("serial", serial)
        json.add("peripheralUid", peripheralUid)
        json.add("imageVersion", record.imageVersion)
        json.add("imageHash", Hex.encode(record.imageHash))
        json.add("imageBytes", Int64(record.imageBytes))
        json.add("outcome", record.outcome?.rawValue)
        json.add("message", record.message)
        json.add("attempts", Int64(record.attempts))
        json.add("startedAt", record.createdAt)
        json.add("finishedAt", record.finishedAt)
        return json.finish()
    }

    static func telemetry(serial: String, _ record: DeviceTelemetryRecord) -> String {
        var json = JSONObjectWriter()
        json.add("serial", serial)
        json.add("kind", record.kind.rawValue)
        json.add("receivedAt", record.receivedAt)
        switch record.kind {
        case .battery:
            json.add("millivolts", record.batteryMillivolts.map(Int64.init))
            json.add("percent", record.batteryPercent.map(Int64.init))
            json.add("charging", record.isCharging)
        case .sleep:
            json.add("reason", record.sleepReason.map(Int64.init))
            json.add("wakeAfterSeconds", record.wakeAfterSeconds.map(Int64.init))
        }
        return json.finish()
    }

    static func settings(serial: String, _ record: DeviceSettingsRecord) throws -> String {
        struct Body: Encodable {
            var serial: String
            var desiredVersion: UInt32?
            var desired: DeviceSettings?
            var desiredChangedBy: SettingsAuthor?
            var reportedVersion: UInt32?
            var reported: DeviceSettings?
            var conflicts: [SettingConflict]
            var serverVersion: Int64?
            var serverSettings: DeviceSettings?
        }
        let body = Body(
            serial: serial, desiredVersion: record.desiredVersion, desired: record.desiredSettings,
            desiredChangedBy: record.desiredChangedBy, reportedVersion: record.reportedVersion,
            reported: record.reportedSettings, conflicts: record.conflicts,
            serverVersion: record.serverVersion, serverSettings: record.serverSettings)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(body), as: UTF8.self)
    }
}

/// A flat JSON object written field by field into bytes (keys are literals, so only values need escaping).
struct JSONObjectWriter {
    private var bytes: [UInt8]

    init() {
        bytes = []
        bytes.reserveCapacity(256)
        bytes.append(UInt8(ascii: "{"))
    }

    mutating func add(_ key: StaticString, _ value: Int64?) {
        addKey(key)
        guard let value else { return appendNull() }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    mutating func add(_ key: StaticString, _ value: Bool?) {
        addKey(key)
        guard let value else { return appendNull() }
        bytes.append(contentsOf: value ? [0x74, 0x72, 0x75, 0x65] : [0x66, 0x61, 0x6C, 0x73, 0x65])
    }

    mutating func add(_ key: StaticString, _ value: String?) {
        addKey(key)
        guard let value else { return appendNull() }
        appendQuoted(value)
    }

    func finish() -> String {
        var bytes = bytes
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    private mutating func appendNull() { bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }

    private mutating func addKey(_ key: StaticString) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    /// RFC 8259 §7: quote, backslash and control characters are escaped; all other UTF-8 is copied as is.
    private mutating func appendQuoted(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                let hex: StaticString = "0123456789abcdef"
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(hex.utf8Start[Int(byte >> 4)])
                bytes.append(hex.utf8Start[Int(byte & 0x0F)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
