import HealthDeviceModel
import TetherDeviceModel
import Foundation

/// What the simulator simulates: the adapter, the advertising devices, the link model and the seed.
///
/// Read from JSON (every key optional except `devices[].address`) or built from flags with `generated(count:seed:)`.
public struct SimulatorConfiguration: Codable, Hashable, Sendable {
    public var adapterAddress: String = "00:AA:01:00:00:01"
    public var adapterName: String = "tether-sim"
    /// Seeds every random choice (RSSI jitter, dropped and duplicated notifications, random disconnects).
    public var seed: UInt64 = 1
    public var link: LinkModel = LinkModel()
    public var devices: [DeviceConfiguration] = []
    /// A file every device appends each event its firmware forgot after the gateway's ACK to, one line
    /// `<address> <serial> <boot> <sequence>`, written (write(2), O_APPEND) before the firmware goes on. The power-cut
    /// rig (scripts/durability/power-cut.sh) keeps it outside the VM whose power it cuts, so the devices' record of
    /// what was ACKed survives the cut that takes the simulator with it.
    public var releasedLog: String?

    public init(devices: [DeviceConfiguration] = [], seed: UInt64 = 1) {
        self.devices = devices
        self.seed = seed
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        adapterAddress = try container.decodeIfPresent(String.self, forKey: .adapterAddress) ?? adapterAddress
        adapterName = try container.decodeIfPresent(String.self, forKey: .adapterName) ?? adapterName
        seed = try container.decodeIfPresent(UInt64.self, forKey: .seed) ?? seed
        link = try container.decodeIfPresent(LinkModel.self, forKey: .link) ?? link
        devices = try container.decodeIfPresent([DeviceConfiguration].self, forKey: .devices) ?? []
        releasedLog = try container.decodeIfPresent(String.self, forKey: .releasedLog)
    }

    /// Reads a JSON configuration file.
    public static func load(contentsOf path: String) throws -> SimulatorConfiguration {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try JSONDecoder().decode(SimulatorConfiguration.self, from: data)
    }

    /// `count` Tether devices named `Tether-0001`..., pairing modes cycling justWorks, passkey, confirmation and
    /// firmware cycling 1.4, 2.0, 1.0.
    public static func generated(count: Int, seed: UInt64) -> SimulatorConfiguration {
        let modes: [PairingMode] = [.justWorks, .passkey, .confirmation]
        let firmwares: [FirmwareModel] = [.v1_4, .v2_0, .v1_0]
        let devices = (0..<max(count, 0)).map { index in
            let number = index + 1
            var device = DeviceConfiguration(
                address: String(format: "C0:54:45:00:%02X:%02X", (number >> 8) & 0xFF, number & 0xFF))
            device.name = String(format: "Tether-%04d", number)
            device.rssi = Int16(-45 - (index % 30))
            device.pairing = modes[index % modes.count]
            device.firmware = firmwares[index % firmwares.count]
            device.serial = String(format: "TS%08d", number)
            return device
        }
        return SimulatorConfiguration(devices: devices, seed: seed)
    }
}

/// How a device authenticates in `Device1.Pair()`.
public enum PairingMode: String, Codable, Hashable, Sendable {
    /// No agent call.
    case justWorks
    /// The device shows `passkey`; BlueZ asks the agent with `RequestPasskey` and compares.
    case passkey
    /// Numeric comparison: BlueZ asks the agent with `RequestConfirmation(device, passkey)`.
    case confirmation
}

/// Which firmware model drives the device.
public enum FirmwareModel: String, Codable, Hashable, Sendable {
    case v1_0 = "1.0"
    case v1_4 = "1.4"
    case v2_0 = "2.0"

    func profile(serial: String) -> DeviceProfile {
        switch self {
        case .v1_0: .v1_0(serial: serial)
        case .v1_4: .v1_4(serial: serial)
        case .v2_0: .v2_0(serial: serial)
        }
    }
}

/// One advertising Tether device.
public struct DeviceConfiguration: Codable, Hashable, Sendable {
    public var address: String
    public var addressType: String = "random"
    public var name: String = "Tether"
    public var rssi: Int16 = -55
    public var txPower: Int16? = 4
    /// Company ID as a decimal string (JSON keys are strings) to bytes, exported as `ManufacturerData` a{qv}.
    public var manufacturerData: [String: [UInt8]] = ["65535": [0x54, 0x01]]
    public var pairing: PairingMode = .justWorks
    /// Shown by the device for `.passkey`, compared for `.confirmation`.
    public var passkey: UInt32 = 123456
    public var firmware: FirmwareModel = .v1_4
    public var serial: String = "TS00000001"
    /// false: the device offers only Device Information and Link Loss, no Tether service (a device the gateway
    /// does not serve: it must report it unsupported and let it go).
    public var tetherService: Bool = true
    /// The GAP Device Name (0x2A00) the device serves; bluetoothd reads it on connecting and renames the device
    /// to it (Device1.Name and Alias). nil: the same as `name`, so no rename.
    public var gapName: String?
    /// A standard Bluetooth health device instead of a Tether device: its kind and parameters (stored records,
    /// users, faults, measurement interval, seed). It offers the profile's services, Current Time where it has a
    /// clock, and Device Information; no Tether service, no manufacturer data unless configured.
    public var health: HealthDeviceSettings?
    /// The firmware's boot counter at start (link protocol §9.8: a real device keeps it in flash across power loss).
    /// A rig that restarts the simulator gives each start counters above every earlier one, so an event never
    /// reuses an earlier event's (boot, sequence) key.
    public var bootCounter: UInt16 = 1
    /// Bonded before the simulator started: bluetoothd loads the bond from storage (/var/lib/bluetooth), so the
    /// device is on the bus, Paired and Bonded, without advertising or a Pair.
    public var bonded: Bool = false
    /// The MCUmgr SMP service (firmware updates over BLE) beside the device's other services; nil: none.
    public var smp: SMPServiceConfiguration?

    public init(address: String) {
        self.address = address
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        address = try container.decode(String.self, forKey: .address)
        addressType = try container.decodeIfPresent(String.self, forKey: .addressType) ?? addressType
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? name
        rssi = try container.decodeIfPresent(Int16.self, forKey: .rssi) ?? rssi
        txPower = try container.decodeIfPresent(Int16.self, forKey: .txPower) ?? txPower
        manufacturerData = try container.decodeIfPresent([String: [UInt8]].self, forKey: .manufacturerData)
            ?? manufacturerData
        pairing = try container.decodeIfPresent(PairingMode.self, forKey: .pairing) ?? pairing
        passkey = try container.decodeIfPresent(UInt32.self, forKey: .passkey) ?? passkey
        firmware = try container.decodeIfPresent(FirmwareModel.self, forKey: .firmware) ?? firmware
        serial = try container.decodeIfPresent(String.self, forKey: .serial) ?? serial
        tetherService = try container.decodeIfPresent(Bool.self, forKey: .tetherService) ?? tetherService
        gapName = try container.decodeIfPresent(String.self, forKey: .gapName)
        health = try container.decodeIfPresent(HealthDeviceSettings.self, forKey: .health)
        bootCounter = try container.decodeIfPresent(UInt16.self, forKey: .bootCounter) ?? bootCounter
        bonded = try container.decodeIfPresent(Bool.self, forKey: .bonded) ?? bonded
        smp = try container.decodeIfPresent(SMPServiceConfiguration.self, forKey: .smp)
        if health != nil {
            tetherService = false
            if !container.contains(.manufacturerData) { manufacturerData = [:] }
        }
    }
}
