import ArgumentParser
import TetherControlClient

/// `tether devices [DEVICE]`: the devices tetherd knows (control-api.md, Device).
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the devices tetherd knows, or show one in detail.")

    @OptionGroup var connection: BusOptions

    @Argument(help: ArgumentHelp("Show only this device (serial or address).", valueName: "device"))
    var device: String?

    @Flag(help: "Print JSON: an array of device records, or one record with a device argument.")
    var json = false

    func run() async throws {
        if let device {
            let record = try await connection.withGateway { try await $0.device(device) }
            Output.line(json ? RecordJSON.text(record) : Self.detail(record))
            return
        }
        let devices = try await connection.withGateway { try await $0.devices() }
        if json {
            Output.line(RecordJSON.text(devices))
        } else if devices.isEmpty {
            Output.line("No devices yet: 'tether scan' finds them, 'tether pair ADDRESS' adds one.")
        } else {
            Output.line(Self.table(devices))
        }
    }

    static func table(_ devices: [GatewayRecord]) -> String {
        typealias F = RecordFormatting
        var table = TextTable("SERIAL", "ADDRESS", "NAME", "PAIRED", "STATE", "RSSI", "EVENTS", "LAST SEEN", "LAST ERROR")
        // control-api.md: "A device on a link that has not sent DEVICE_INFO yet is listed without serial".
        let ordered = devices.sorted {
            ($0.string("serial") ?? "~" + ($0.string("address") ?? "")) < ($1.string("serial") ?? "~" + ($1.string("address") ?? ""))
        }
        for device in ordered {
            table.add([
                device.string("serial") ?? F.absent, device.string("address") ?? F.absent,
                device.string("name") ?? F.absent, F.flag(device.bool("paired")), device.string("state") ?? F.absent,
                F.number(device.integer("rssi")), F.number(device.integer("events_stored")),
                F.time(device.integer("last_seen_at")), device.string("last_error") ?? "",
            ])
        }
        return table.text
    }

    static func detail(_ device: GatewayRecord) -> String {
        var table = TextTable("", "")
        for key in device.sortedKeys {
            let value = device[key]
            let shown: String
            switch key {
            case "last_seen_at": shown = RecordFormatting.time(device.integer(key))
            default: shown = RecordFormatting.value(value)
            }
            table.add([key, shown])
        }
        return table.lines.dropFirst().joined(separator: "\n")
    }
}
