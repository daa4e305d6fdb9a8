import TetherSettings
import TetherPrimitives
/// The settings of a device (§7.11) with the version they belong to: CONFIG_DATA and SET_CONFIG.
public struct DeviceConfig: Hashable, Sendable {
    public var version: UInt32
    public var settings: DeviceSettings

    public init(version: UInt32, settings: DeviceSettings) {
        self.version = version
        self.settings = settings
    }

    init(reading reader: inout ByteReader) throws(FrameError) {
        guard let version = reader.readUInt32() else { throw FrameError(.malformed, reason: "config needs a 4-byte version") }
        var records: [SettingRecord] = []
        while reader.remaining > 0 {
            guard let key = reader.readUInt8(), let length = reader.readUInt8(), let value = reader.readBytes(Int(length))
            else { throw FrameError(.malformed, reason: "config TLV record cut short") }
            records.append(SettingRecord(key: key, value: Array(value)))
        }
        do {
            self.init(version: version, settings: try DeviceSettings(records: records))
        } catch {
            throw FrameError(.malformed, reason: error.description)
        }
    }

    func write(to writer: inout ByteWriter) {
        writer.write(version)
        for record in settings.records {
            writer.write(record.key)
            writer.write(UInt8(record.value.count))
            writer.write(contentsOf: record.value)
        }
    }
}
