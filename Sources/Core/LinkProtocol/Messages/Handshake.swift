import TetherPrimitives
/// HELLO (§7.1): the gateway's opening, with the versions it speaks.
public struct Hello: Hashable, Sendable {
    public var versions: ClosedRange<UInt8>
    /// Reliable frames the gateway accepts unacknowledged, 1…32 (§8.6).
    public var window: UInt8

    public init(versions: ClosedRange<UInt8>, window: UInt8) {
        self.versions = versions
        self.window = window
    }

    public static let maxWindow: UInt8 = 32

    init(reading reader: inout ByteReader) throws(FrameError) {
        guard let low = reader.readUInt8(), let high = reader.readUInt8(), let window = reader.readUInt8() else {
            throw FrameError(.malformed, reason: "HELLO needs 3 bytes")
        }
        guard low >= 1, low <= high, (1...Self.maxWindow).contains(window) else {
            throw FrameError(.malformed, reason: "HELLO versions \(low)…\(high) or window \(window) out of range")
        }
        self.init(versions: low...high, window: window)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(versions.lowerBound)
        writer.write(versions.upperBound)
        writer.write(window)
    }
}

/// DEVICE_INFO (§7.2): who the device is and which boot it is in.
public struct DeviceInfo: Hashable, Sendable {
    public var hardwareRevision: UInt8
    public var firmware: FirmwareVersion
    public var bootCounter: UInt16
    public var capabilities: DeviceCapabilities
    public var versions: ClosedRange<UInt8>
    public var serial: String

    public init(
        hardwareRevision: UInt8, firmware: FirmwareVersion, bootCounter: UInt16,
        capabilities: DeviceCapabilities, versions: ClosedRange<UInt8>, serial: String
    ) {
        self.hardwareRevision = hardwareRevision
        self.firmware = firmware
        self.bootCounter = bootCounter
        self.capabilities = capabilities
        self.versions = versions
        self.serial = serial
    }

    public static let serialLengths = 1...32

    init(reading reader: inout ByteReader) throws(FrameError) {
        guard let hardware = reader.readUInt8(), let major = reader.readUInt8(), let minor = reader.readUInt8(),
            let patch = reader.readUInt8(), let boot = reader.readUInt16(), let capabilities = reader.readUInt16(),
            let low = reader.readUInt8(), let high = reader.readUInt8(), let serialLength = reader.readUInt8()
        else { throw FrameError(.malformed, reason: "DEVICE_INFO shorter than its 13-byte fixed part") }
        guard Self.serialLengths.contains(Int(serialLength)), let serialBytes = reader.readBytes(Int(serialLength))
        else { throw FrameError(.malformed, reason: "DEVICE_INFO serial length \(serialLength) out of range or cut short") }
        // Printable ASCII only: the serial ends up in logs, file names and URLs.
        guard serialBytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw FrameError(.malformed, reason: "DEVICE_INFO serial is not printable ASCII")
        }
        guard low >= 1, low <= high else {
            throw FrameError(.malformed, reason: "DEVICE_INFO versions \(low)…\(high) are not a range")
        }
        self.init(
            hardwareRevision: hardware, firmware: FirmwareVersion(major: major, minor: minor, patch: patch),
            bootCounter: boot, capabilities: DeviceCapabilities(rawValue: capabilities), versions: low...high,
            serial: String(decoding: serialBytes, as: UTF8.self))
    }

    func write(to writer: inout ByteWriter) {
        writer.write(hardwareRevision)
        writer.write(firmware.major)
        writer.write(firmware.minor)
        writer.write(firmware.patch)
        writer.write(bootCounter)
        writer.write(capabilities.rawValue)
        writer.write(versions.lowerBound)
        writer.write(versions.upperBound)
        let serialBytes = Array(serial.utf8.prefix(Self.serialLengths.upperBound))
        writer.write(UInt8(serialBytes.count))
        writer.write(contentsOf: serialBytes)
    }
}

public struct FirmwareVersion: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var major: UInt8
    public var minor: UInt8
    public var patch: UInt8

    public init(major: UInt8, minor: UInt8, patch: UInt8) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    public static func < (a: Self, b: Self) -> Bool { (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch) }
    public var description: String { "\(major).\(minor).\(patch)" }
}

/// §7.2 capability bits.
public struct DeviceCapabilities: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let battery = DeviceCapabilities(rawValue: 1 << 0)
    public static let haptics = DeviceCapabilities(rawValue: 1 << 1)
    public static let led = DeviceCapabilities(rawValue: 1 << 2)
    public static let sleep = DeviceCapabilities(rawValue: 1 << 3)
}
