import Foundation
import TOMLKit

/// Every key tetherd accepts, by section, and how each one's value is read into `DaemonConfiguration`.
/// A key not listed here is refused; `deploy/tether.toml` documents each of them (a test checks both agree).
enum ConfigurationSchema {
    /// Reads one value into the configuration, or returns what is wrong with it (the reader adds key and line).
    typealias Apply = @Sendable (inout DaemonConfiguration, any TOMLValueConvertible) -> String?

    struct Key: Sendable {
        let name: String
        let apply: Apply
    }

    static let sections: [(name: String, keys: [Key])] = [
        ("gateway", [
            Key(name: "database") { config, value in
                path(value) { config.gateway.database = $0 }
            },
            Key(name: "state_directory") { config, value in
                path(value) { config.gateway.stateDirectory = $0 }
            },
        ]),
        ("bluetooth", [
            Key(name: "bus") { config, value in
                bus(value) { config.bluetooth.bus = $0 }
            },
            Key(name: "adapter") { config, value in
                string(value) { name in
                    // BlueZ names adapters hciN (/org/bluez/hciN).
                    guard name.hasPrefix("hci"), name.count > 3, name.dropFirst(3).allSatisfy(\.isNumber) else {
                        return "expected an adapter name like \"hci0\", got \"\(name)\""
                    }
                    config.bluetooth.adapter = name
                    return nil
                }
            },
            Key(name: "max_connections") { config, value in
                // The controller is the real ceiling (it refuses a connection it has no room for, and the
                // supervisor backs off); 32 leaves room for a USB controller serving a clinic room's devices.
                integer(value, in: 1...32) { config.bluetooth.maximumConnections = $0 }
            },
            Key(name: "backoff_initial") { config, value in
                duration(value) { config.bluetooth.backoffInitial = $0 }
            },
            Key(name: "backoff_max") { config, value in
                duration(value) { config.bluetooth.backoffMaximum = $0 }
            },
            Key(name: "notify_method") { config, value in
                choice(value, DaemonConfiguration.NotifyMethod.self) { config.bluetooth.notifyMethod = $0 }
            },
        ]),
        ("sync", [
            Key(name: "server_url") { config, value in
                string(value) { text in
                    guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme),
                        url.host != nil
                    else { return "expected an http:// or https:// URL with a host, got \"\(text)\"" }
                    config.sync.serverURL = url
                    return nil
                }
            },
            Key(name: "token_file") { config, value in
                path(value) { config.sync.tokenFile = $0 }
            },
            Key(name: "ca_file") { config, value in
                path(value) { config.sync.caFile = $0 }
            },
            Key(name: "interval") { config, value in
                duration(value) { config.sync.interval = $0 }
            },
        ]),
        ("health", [
            Key(name: "enabled") { config, value in
                guard let flag = value.bool else { return "expected true or false, got \(describe(value))" }
                config.health.enabled = flag
                return nil
            },
            Key(name: "consent_codes_file") { config, value in
                path(value) { config.health.consentCodesFile = $0 }
            },
            Key(name: "write_device_time") { config, value in
                choice(value, DaemonConfiguration.DeviceTimeWrite.self) { config.health.writeDeviceTime = $0 }
            },
            Key(name: "device_time_tolerance") { config, value in
                string(value) { text in
                    // Below a second the reading of the clock itself (whole seconds plus 1/256 s, CTS v1.1 §3.1,
                    // and the time of the read's answer) is the error: every connection would write.
                    guard let tolerance = ConfigurationValues.duration(text), tolerance >= .seconds(1) else {
                        return "expected at least 1s, \(ConfigurationValues.durationForm), got \"\(text)\""
                    }
                    config.health.deviceTimeTolerance = tolerance
                    return nil
                }
            },
            Key(name: "delete_acknowledged_records") { config, value in
                // An explicit list of devices: a device's memory is the person's copy, and only someone who
                // decided so for that device may let the gateway free it.
                addresses(value) { config.health.deleteAcknowledgedRecords = $0 }
            },
            Key(name: "audit_vanished_records") { config, value in
                // An explicit list too: a record gone from a device becomes a deletion on the backend, which
                // someone must have wanted for that device.
                addresses(value) { config.health.auditVanishedRecords = $0 }
            },
        ]),
        ("firmware", [
            Key(name: "trusted_keys") { config, value in
                path(value) { config.firmware.trustedKeys = $0 }
            },
        ]),
        ("control", [
            Key(name: "bus") { config, value in
                bus(value) { config.control.bus = $0 }
            },
        ]),
        ("metrics", [
            Key(name: "enabled") { config, value in
                guard let flag = value.bool else { return "expected true or false, got \(describe(value))" }
                config.metrics.enabled = flag
                return nil
            },
            Key(name: "listen") { config, value in
                string(value) { text in
                    guard let address = ConfigurationValues.listenAddress(text) else {
                        return "expected host:port such as \"127.0.0.1:9464\", got \"\(text)\""
                    }
                    // The endpoint has no authentication; publishing it is a reverse proxy's job.
                    guard address.isLoopback else {
                        return "\(address.host) is not a loopback address; the metrics endpoint has no authentication, so it listens on 127.0.0.1, ::1 or localhost only"
                    }
                    config.metrics.listen = address
                    return nil
                }
            },
        ]),
        ("log", [
            Key(name: "level") { config, value in
                choice(value, DaemonConfiguration.LogLevel.self) { config.log.level = $0 }
            },
        ]),
        ("storage", [
            Key(name: "max_database_size") { config, value in
                string(value) { text in
                    if text == "unlimited" {
                        config.storage.maximumDatabaseBytes = nil
                        return nil
                    }
                    guard let bytes = ConfigurationValues.size(text), bytes >= 1 << 20 else {
                        return "expected \"unlimited\" or a size of at least 1MiB: \(ConfigurationValues.sizeForm), got \"\(text)\""
                    }
                    config.storage.maximumDatabaseBytes = bytes
                    return nil
                }
            },
            Key(name: "min_free_disk") { config, value in
                string(value) { text in
                    guard let bytes = ConfigurationValues.size(text) else {
                        return "expected \(ConfigurationValues.sizeForm), got \"\(text)\""
                    }
                    config.storage.minimumFreeDiskBytes = bytes
                    return nil
                }
            },
            Key(name: "retention") { config, value in
                duration(value) { config.storage.retention = $0 }
            },
            Key(name: "retention_interval") { config, value in
                duration(value) { config.storage.retentionInterval = $0 }
            },
            Key(name: "checkpoint_interval") { config, value in
                duration(value) { config.storage.checkpointInterval = $0 }
            },
        ]),
    ]

    /// Every accepted key as `section.key`.
    static var allKeys: [String] {
        sections.flatMap { section in section.keys.map { "\(section.name).\($0.name)" } }
    }

    // MARK: Value readers

    static func describe(_ value: any TOMLValueConvertible) -> String {
        switch value.type {
        case .string: "the string \"\(value.string ?? "")\""
        case .int: "the integer \(value.int ?? 0)"
        case .table: "a table"
        case .array: "an array"
        default: "a \(value.type.rawValue)"
        }
    }

    /// A list of device addresses (`["C0:54:45:00:00:03"]`), upper case, without repeats.
    static func addresses(_ value: any TOMLValueConvertible, _ body: ([String]) -> Void) -> String? {
        guard let array = value.array else {
            return "expected a list of device addresses such as [\"C0:54:45:00:00:03\"], got \(describe(value))"
        }
        var addresses: [String] = []
        for (index, element) in array.enumerated() {
            guard let text = element.string else {
                return "entry \(index + 1): expected a device address as a string, got \(describe(element))"
            }
            guard let address = ConfigurationValues.deviceAddress(text) else {
                return "entry \(index + 1): expected a device address, six hexadecimal pairs separated by colons (\"C0:54:45:00:00:03\"), got \"\(text)\""
            }
            if !addresses.contains(address) { addresses.append(address) }
        }
        body(addresses)
        return nil
    }

    static func string(_ value: any TOMLValueConvertible, _ body: (String) -> String?) -> String? {
        guard let text = value.string else { return "expected a string, got \(describe(value))" }
        return body(text)
    }

    static func bus(_ value: any TOMLValueConvertible, _ set: (DaemonConfiguration.Bus) -> Void) -> String? {
        string(value) { text in
            if text == "system" {
                set(.system)
            } else if text.contains(":") && text.contains("=") {
                set(.address(text))
            } else {
                return "expected \"system\" or a D-Bus address such as \"unix:path=/run/tether/bus\", got \"\(text)\""
            }
            return nil
        }
    }

    static func path(_ value: any TOMLValueConvertible, _ set: (String) -> Void) -> String? {
        string(value) { text in
            guard text.hasPrefix("/") else { return "expected an absolute path, got \"\(text)\"" }
            set(text)
            return nil
        }
    }

    static func integer(_ value: any TOMLValueConvertible, in range: ClosedRange<Int>, _ set: (Int) -> Void) -> String? {
        guard value.type == .int, let number = value.int else { return "expected an integer, got \(describe(value))" }
        guard range.contains(number) else {
            return "\(number) is outside \(range.lowerBound)…\(range.upperBound)"
        }
        set(number)
        return nil
    }

    static func duration(_ value: any TOMLValueConvertible, _ set: (Duration) -> Void) -> String? {
        string(value) { text in
            guard let duration = ConfigurationValues.duration(text) else {
                return "expected \(ConfigurationValues.durationForm), got \"\(text)\""
            }
            set(duration)
            return nil
        }
    }

    static func choice<Choice: RawRepresentable & CaseIterable>(
        _ value: any TOMLValueConvertible, _ type: Choice.Type, _ set: (Choice) -> Void
    ) -> String? where Choice.RawValue == String {
        string(value) { text in
            guard let chosen = Choice(rawValue: text) else {
                let names = Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                return "expected one of \(names), got \"\(text)\""
            }
            set(chosen)
            return nil
        }
    }
}
