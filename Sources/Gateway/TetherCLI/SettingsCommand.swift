import ArgumentParser
import DBus
import TetherControlClient

/// `tether settings get|set`: a device's desired and reported settings (control-api.md, Settings).
struct SettingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Read or change a device's settings.",
        subcommands: [Get.self, Set.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a device's settings: what the gateway wants (desired) and what the device reports.")

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("The device's serial.", valueName: "serial"))
        var serial: String

        @Flag(help: "Print the settings record as JSON (desired.NAME and reported.NAME keys).")
        var json = false

        func run() async throws {
            let settings = try await connection.withGateway { try await $0.settings(serial) }
            Output.line(json ? RecordJSON.text(settings) : SettingsCommand.render(settings))
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change settings; the device applies them when it is next connected.",
            discussion: """
                Give each change as NAME=VALUE, with the names 'tether settings get' lists. Switches take on/off, \
                numbers whole numbers. Settings not named stay as they are. Needs root or the 'tether' group.
                """)

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("The device's serial.", valueName: "serial"))
        var serial: String

        @Argument(help: ArgumentHelp("The changes, e.g. led_brightness=40 haptic=off.", valueName: "name=value"))
        var changes: [String]

        @Flag(help: "Print the resulting settings record as JSON.")
        var json = false

        func validate() throws {
            guard !changes.isEmpty else { throw ValidationError("Name at least one change as NAME=VALUE.") }
            for change in changes {
                do { _ = try SettingValue.assignment(change) } catch let problem as SettingValue.Problem {
                    throw ValidationError(problem.message)
                }
            }
        }

        func run() async throws {
            let settings = try await connection.withGateway { client -> GatewayRecord in
                let current = try await client.settings(serial)
                var desired: [String: DBusValue] = [:]
                for change in changes {
                    let (name, text) = try SettingValue.assignment(change)
                    guard let present = SettingValue.example(of: name, in: current.fields) else {
                        let known = SettingValue.names(in: current.fields).joined(separator: ", ")
                        throw usageFailure("\(serial) has no setting '\(name)'; its settings are: \(known)")
                    }
                    do {
                        desired[name] = try SettingValue.parse(text, name: name, like: present)
                    } catch let problem as SettingValue.Problem {
                        throw usageFailure(problem.message)
                    }
                }
                return try await client.setSettings(serial, desired: desired)
            }
            Output.line(json ? RecordJSON.text(settings) : SettingsCommand.render(settings))
        }
    }

    static func render(_ settings: GatewayRecord) -> String {
        var lines = ["\(settings.string("serial") ?? "device")  version \(RecordFormatting.number(settings.integer("version")))"]
        var table = TextTable("SETTING", "DESIRED", "REPORTED")
        let names = Swift.Set(
            settings.fields.keys.compactMap { key -> String? in
                for prefix in ["desired.", "reported."] where key.hasPrefix(prefix) { return String(key.dropFirst(prefix.count)) }
                return nil
            })
        for name in names.sorted() {
            let desired = RecordFormatting.value(settings["desired.\(name)"])
            let reported = RecordFormatting.value(settings["reported.\(name)"])
            // Pending: the gateway wants a value the device has not reported yet.
            let pending = settings["desired.\(name)"] != nil && desired != reported
            table.add([name, desired, reported + (pending ? "  (pending)" : "")])
        }
        lines += table.lines
        return lines.joined(separator: "\n")
    }
}
