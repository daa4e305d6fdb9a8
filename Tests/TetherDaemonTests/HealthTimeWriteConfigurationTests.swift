import TetherGateway
import Testing
@testable import TetherDaemon

/// `[health] write_device_time` and `device_time_tolerance`: read into the gateway's time-write mode, bad values
/// named by key and line, and the default is the safe one (only a clock that is not set).
struct HealthTimeWriteConfigurationTests {
    func gateway(_ document: String) throws -> GatewayConfiguration {
        let configuration = try ConfigurationReader.parse(document, path: "health.toml")
        var gateway = GatewayConfiguration()
        gateway.healthTimeWrite = .always  // a value every mapping below must replace
        configuration.health.apply(to: &gateway)
        return gateway
    }

    @Test func theDefaultWritesOnlyAClockThatIsNotSet() throws {
        #expect(try gateway("").healthTimeWrite == .whenClockNotSet)
        #expect(GatewayConfiguration().healthTimeWrite == .whenClockNotSet)
    }

    @Test func eachChoiceIsTheGatewaysMode() throws {
        #expect(try gateway("[health]\nwrite_device_time = \"never\"\n").healthTimeWrite == .never)
        #expect(try gateway("[health]\nwrite_device_time = \"when-not-set\"\n").healthTimeWrite == .whenClockNotSet)
        #expect(try gateway("[health]\nwrite_device_time = \"always\"\n").healthTimeWrite == .always)
        // The tolerance applies to "when-drifted"; its default is two minutes (DeviceClockFacts' own tolerance).
        #expect(try gateway("[health]\nwrite_device_time = \"when-drifted\"\n").healthTimeWrite == .whenSkewExceeds(.seconds(120)))
        #expect(try gateway("[health]\nwrite_device_time = \"when-drifted\"\ndevice_time_tolerance = \"5m\"\n").healthTimeWrite
            == .whenSkewExceeds(.seconds(300)))
    }

    @Test func badValuesNameTheKeyAndTheLine() {
        do {
            _ = try ConfigurationReader.parse("""
                [health]
                enabled = true
                write_device_time = "sometimes"
                device_time_tolerance = "500ms"
                """, path: "bad.toml")
            Issue.record("bad values were accepted")
        } catch {
            let found = error.problems.map { ($0.key, $0.line) }
            #expect(found.map(\.0) == ["health.write_device_time", "health.device_time_tolerance"], "\(error.problems)")
            #expect(found.map(\.1) == [3, 4])
            let messages = error.problems.map(\.message)
            #expect(messages.first?.contains("\"never\", \"when-not-set\", \"when-drifted\", \"always\"") == true, "\(messages)")
            #expect(messages.last?.contains("at least 1s") == true, "\(messages)")
        }
    }
}
