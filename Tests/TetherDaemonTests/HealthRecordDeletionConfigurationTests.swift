import TetherGateway
import Testing
@testable import TetherDaemon

/// `[health] delete_acknowledged_records`: off by default, a list of device addresses read into the gateway's
/// deletion policy, bad values named by key and line.
struct HealthRecordDeletionConfigurationTests {
    func gateway(_ document: String) throws -> GatewayConfiguration {
        let configuration = try ConfigurationReader.parse(document, path: "health.toml")
        var gateway = GatewayConfiguration()
        gateway.healthRecordDeletion = HealthRecordDeletionPolicy(addresses: ["AA:AA:AA:AA:AA:AA"])  // must be replaced
        configuration.health.apply(to: &gateway)
        return gateway
    }

    @Test func theDefaultDeletesNothing() throws {
        #expect(try gateway("").healthRecordDeletion == .off)
        #expect(GatewayConfiguration().healthRecordDeletion == .off)
        #expect(try gateway("[health]\ndelete_acknowledged_records = []\n").healthRecordDeletion == .off)
    }

    @Test func theListedDevicesAndNoOthers() throws {
        let policy = try gateway("""
            [health]
            delete_acknowledged_records = ["c0:54:45:00:00:03", "C0:54:45:00:00:07", "C0:54:45:00:00:03"]
            """).healthRecordDeletion
        #expect(policy.addresses == ["C0:54:45:00:00:03", "C0:54:45:00:00:07"])
        #expect(policy.allows("C0:54:45:00:00:03") && policy.allows("c0:54:45:00:00:07"))
        #expect(!policy.allows("C0:54:45:00:00:04"))
    }

    @Test func badValuesNameTheKeyAndTheLine() {
        for (value, hint) in [
            ("\"all\"", "expected a list of device addresses"),
            ("true", "expected a list of device addresses"),
            ("[\"C0:54:45:00:00\"]", "entry 1: expected a device address"),
            ("[\"C0:54:45:00:00:03\", \"all\"]", "entry 2: expected a device address"),
            ("[\"C0:54:45:00:00:0G\"]", "entry 1: expected a device address"),
            ("[3]", "entry 1: expected a device address as a string"),
        ] {
            do {
                _ = try ConfigurationReader.parse("[health]\nenabled = true\ndelete_acknowledged_records = \(value)\n", path: "bad.toml")
                Issue.record("\(value) was accepted")
            } catch {
                #expect(error.problems.map(\.key) == ["health.delete_acknowledged_records"], "\(value): \(error.problems)")
                #expect(error.problems.map(\.line) == [3], "\(value)")
                #expect(error.problems.first?.message.contains(hint) == true, "\(value): \(error.problems)")
            }
        }
    }
}
