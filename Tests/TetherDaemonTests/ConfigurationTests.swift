import Foundation
import TetherGateway
import Testing
@testable import TetherDaemon

/// The TOML configuration: every problem names the key and its line (issue 6), defaults hold for an empty file,
/// and the annotated example documents exactly the keys tetherd accepts.
struct ConfigurationTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let example = repository.appendingPathComponent("deploy/tether.toml").path

    func problems(_ document: String) -> [ConfigurationProblem] {
        do {
            _ = try ConfigurationReader.parse(document, path: "test.toml")
            return []
        } catch {
            return error.problems
        }
    }

    @Test func anEmptyFileGivesTheDefaults() throws {
        let configuration = try ConfigurationReader.parse("", path: "empty.toml")
        #expect(configuration == DaemonConfiguration())
        #expect(configuration.gateway.database == "/var/lib/tether/gateway.sqlite")
        #expect(configuration.sync.serverURL == nil)
        #expect(configuration.metrics.listen == ListenAddress(host: "127.0.0.1", port: 9464))
    }

    @Test func valuesAreRead() throws {
        let configuration = try ConfigurationReader.parse("""
            [gateway]
            database = "/data/gw.sqlite"
            [bluetooth]
            bus = "unix:path=/tmp/bus"
            adapter = "hci1"
            max_connections = 3
            backoff_initial = "500ms"
            backoff_max = "2m"
            notify_method = "start-notify"
            [sync]
            server_url = "https://backend.example:8443"
            interval = "15s"
            [control]
            bus = "unix:path=/tmp/control"
            [metrics]
            listen = "[::1]:9100"
            [log]
            level = "debug"
            [storage]
            max_database_size = "2GiB"
            min_free_disk = "100MB"
            retention = "7d"
            """, path: "full.toml")
        #expect(configuration.gateway.database == "/data/gw.sqlite")
        #expect(configuration.bluetooth.bus == .address("unix:path=/tmp/bus"))
        #expect(configuration.bluetooth.adapter == "hci1")
        #expect(configuration.bluetooth.maximumConnections == 3)
        #expect(configuration.bluetooth.backoffInitial == .milliseconds(500))
        #expect(configuration.bluetooth.backoffMaximum == .seconds(120))
        #expect(configuration.bluetooth.notifyMethod == .startNotify)
        #expect(configuration.sync.serverURL?.absoluteString == "https://backend.example:8443")
        #expect(configuration.sync.interval == .seconds(15))
        #expect(configuration.control.bus == .address("unix:path=/tmp/control"))
        #expect(configuration.metrics.listen == ListenAddress(host: "::1", port: 9100))
        #expect(configuration.log.level == .debug)
        #expect(configuration.storage.maximumDatabaseBytes == 2 << 30)
        #expect(configuration.storage.minimumFreeDiskBytes == 100_000_000)
        #expect(configuration.storage.retention == .seconds(7 * 86_400))
    }

    @Test func unknownKeysAndSectionsAreNamedWithTheirLines() {
        let found = problems("""
            # comment
            [gateway]
            database = "/var/lib/tether/gw.sqlite"
            databse = "/typo"

            [blutooth]
            adapter = "hci0"
            """)
        #expect(found.map(\.key) == ["gateway.databse", "blutooth"])
        #expect(found.map(\.line) == [4, 6])
        #expect(found[0].message.contains("unknown key"))
        #expect(found[0].message.contains("database"))  // lists what [gateway] takes
        #expect(found[1].message.contains("unknown section"))
    }

    @Test func badValuesAreNamedWithTheirLines() {
        let found = problems("""
            [bluetooth]
            max_connections = 0
            backoff_initial = "soon"
            notify_method = "polling"
            adapter = 5

            [sync]
            server_url = "ftp://example"

            [metrics]
            listen = "0.0.0.0:9464"

            [storage]
            min_free_disk = "lots"
            """)
        let byKey = Dictionary(uniqueKeysWithValues: found.map { ($0.key ?? "", $0) })
        #expect(byKey["bluetooth.max_connections"]?.line == 2)
        #expect(byKey["bluetooth.max_connections"]?.message == "0 is outside 1…32")
        #expect(byKey["bluetooth.backoff_initial"]?.line == 3)
        #expect(byKey["bluetooth.backoff_initial"]?.message.contains("unit") == true)
        #expect(byKey["bluetooth.notify_method"]?.line == 4)
        #expect(byKey["bluetooth.notify_method"]?.message.contains("\"start-notify\"") == true)
        #expect(byKey["bluetooth.adapter"]?.line == 5)
        #expect(byKey["bluetooth.adapter"]?.message == "expected a string, got the integer 5")
        #expect(byKey["sync.server_url"]?.line == 8)
        #expect(byKey["metrics.listen"]?.line == 11)
        #expect(byKey["metrics.listen"]?.message.contains("loopback") == true)
        #expect(byKey["storage.min_free_disk"]?.line == 14)
        #expect(found.count == 7)
        // In line order, so the first line to fix comes first.
        #expect(found.map { $0.line ?? 0 } == found.map { $0.line ?? 0 }.sorted())
    }

    @Test func rulesBetweenKeysNameTheKeyAtFault() {
        let found = problems("""
            [bluetooth]
            backoff_initial = "10m"
            backoff_max = "1m"
            """)
        #expect(found.map(\.key) == ["bluetooth.backoff_max"])
        #expect(found.first?.line == 3)
    }

    @Test func invalidTOMLGivesTheParserLine() {
        let found = problems("""
            [gateway]
            database = "/var/lib/tether/gw.sqlite"
            state_directory = "/var/lib/tether
            """)
        #expect(found.count == 1)
        #expect(found.first?.line == 3)
        #expect(found.first?.message.hasPrefix("not valid TOML") == true)
    }

    @Test func keyLinesSkipMultiLineValuesAndFindDottedKeys() {
        let lines = TOMLKeyLines(document: """
            [gateway]
            note = \"\"\"
            looks = "like a key"
            \"\"\"
            list = [
              "x = 1",
            ]
            after = 1
            [metrics]
            a.b = 2
            "quoted key" = 3
            """)
        #expect(lines.lines["gateway.note"] == 2)
        #expect(lines.lines["gateway.looks"] == nil)
        #expect(lines.lines["gateway.list"] == 5)
        #expect(lines.lines["gateway.after"] == 8)
        #expect(lines.lines["metrics.a.b"] == 10)
        #expect(lines.lines["metrics.quoted key"] == 11)
        #expect(lines.line(of: "metrics.missing") == 9)
    }

    @Test func theAnnotatedExampleIsValidAndDocumentsEveryKey() throws {
        let document = try String(contentsOfFile: Self.example, encoding: .utf8)
        _ = try ConfigurationReader.parse(document, path: Self.example)
        // Every accepted key appears in the example, set or commented out.
        for key in ConfigurationSchema.allKeys {
            let name = String(key.split(separator: ".").last!)
            let section = String(key.split(separator: ".").first!)
            let sectionText = document.components(separatedBy: "[\(section)]").dropFirst().first?.components(separatedBy: "\n[").first ?? ""
            #expect(sectionText.contains("\n\(name) = ") || sectionText.contains("\n# \(name) = "), "deploy/tether.toml does not document \(key)")
        }
    }

    @Test func valueForms() {
        #expect(ConfigurationValues.duration("250ms") == .milliseconds(250))
        #expect(ConfigurationValues.duration("30d") == .seconds(30 * 86_400))
        #expect(ConfigurationValues.duration("0s") == nil)
        #expect(ConfigurationValues.duration("-5s") == nil)
        #expect(ConfigurationValues.duration("5") == nil)
        #expect(ConfigurationValues.size("64MiB") == 64 << 20)
        #expect(ConfigurationValues.size("4096") == 4096)
        #expect(ConfigurationValues.size("1.5GiB") == nil)
        #expect(ConfigurationValues.listenAddress("localhost:80") == ListenAddress(host: "localhost", port: 80))
        #expect(ConfigurationValues.listenAddress("127.0.0.1:0") == nil)
        #expect(ConfigurationValues.listenAddress("::1:80") == nil)
    }

    /// `notify_method`: "auto" falls back to StartNotify per device, "acquire-notify" never does (a refusal is the
    /// device's error, retried by the supervisor), "start-notify" uses StartNotify only.
    @Test(arguments: [
        ("auto", GatewayConfiguration.NotifyPreference.acquireFirst),
        ("acquire-notify", .acquireOnly),
        ("start-notify", .startNotifyOnly),
    ])
    func notifyMethodChoosesTheGatewaysSubscription(
        value: String, preference: GatewayConfiguration.NotifyPreference
    ) throws {
        let configuration = try ConfigurationReader.parse(
            "[bluetooth]\nnotify_method = \"\(value)\"\n", path: "notify.toml")
        var gateway = GatewayConfiguration()
        // Start from a value the mapping must replace, whichever it is.
        gateway.notifyPreference = preference == .startNotifyOnly ? .acquireOnly : .startNotifyOnly
        configuration.bluetooth.notifyMethod.apply(to: &gateway)
        #expect(gateway.notifyPreference == preference)
    }
}
