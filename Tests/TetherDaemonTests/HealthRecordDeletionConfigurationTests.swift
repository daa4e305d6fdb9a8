import TetherGateway
import Testing
@testable import TetherDaemon

/// `[health] delete_acknowledged_records` and `audit_vanished_records`: off by default, lists of device addresses
/// read into the gateway's per-device policies, bad values named by key and line.
struct HealthRecordDeletionConfigurationTests {
    static let keys = ["delete_acknowledged_records", "audit_vanished_records"]

    func policy(_ key: String, _ document: String) throws -> HealthDevicePolicy {
        let configuration = try ConfigurationReader.parse(document, path: "health.toml")
        var gateway = GatewayConfiguration()
        // Both must be replaced.
        gateway.healthRecordDeletion = HealthDevicePolicy(addresses: ["AA:AA:AA:AA:AA:AA"])
        gateway.healthVanishedRecordAudit = HealthDevicePolicy(addresses: ["AA:AA:AA:AA:AA:AA"])
        configuration.health.apply(to: &gateway)
        return key == "audit_vanished_records" ? gateway.healthVanishedRecordAudit : gateway.healthRecordDeletion
    }

    @Test(arguments: keys) func theDefaultIsNoDevice(_ key: String) throws {
        #expect(try policy(key, "") == .off)
        #expect(GatewayConfiguration().healthRecordDeletion == .off && GatewayConfiguration().healthVanishedRecordAudit == .off)
        #expect(try policy(key, "[health]\n\(key) = []\n") == .off)
    }

    @Test(arguments: keys) func theListedDevicesAndNoOthers(_ key: String) throws {
        let policy = try policy(key, """
            [health]
            \(key) = ["c0:54:45:00:00:03", "C0:54:45:00:00:07", "C0:54:45:00:00:03"]
            """)
        #expect(policy.addresses == ["C0:54:45:00:00:03", "C0:54:45:00:00:07"])
        #expect(policy.allows("C0:54:45:00:00:03") && policy.allows("c0:54:45:00:00:07"))
        #expect(!policy.allows("C0:54:45:00:00:04"))
        let other = Self.keys.first { $0 != key }!
        #expect(try self.policy(other, "[health]\n\(key) = [\"C0:54:45:00:00:03\"]\n") == .off, "one key does not set the other")
    }

    @Test(arguments: keys) func badValuesNameTheKeyAndTheLine(_ key: String) {
        for (value, hint) in [
            ("\"all\"", "expected a list of device addresses"),
            ("true", "expected a list of device addresses"),
            ("[\"C0:54:45:00:00\"]", "entry 1: expected a device address"),
            ("[\"C0:54:45:00:00:03\", \"all\"]", "entry 2: expected a device address"),
            ("[\"C0:54:45:00:00:0G\"]", "entry 1: expected a device address"),
            ("[3]", "entry 1: expected a device address as a string"),
        ] {
            do {
                _ = try ConfigurationReader.parse("[health]\nenabled = true\n\(key) = \(value)\n", path: "bad.toml")
                Issue.record("\(value) was accepted")
            } catch {
                #expect(error.problems.map(\.key) == ["health.\(key)"], "\(value): \(error.problems)")
                #expect(error.problems.map(\.line) == [3], "\(value)")
                #expect(error.problems.first?.message.contains(hint) == true, "\(value): \(error.problems)")
            }
        }
    }
}
