import ArgumentParser
import DBus
import Foundation
import TetherControlClient

/// `--bus`: which bus tetherd is on. Shared by every command that talks to the daemon.
public struct BusOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The bus tetherd is on: 'system' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.",
            valueName: "system|address"))
    var bus: String?

    public init() {}

    /// control-api.md: tetherd is on the system bus; tests and the demo use a private bus named by address.
    func address(environment: [String: String] = ProcessInfo.processInfo.environment) -> DBusBusAddress {
        let chosen = bus ?? environment["TETHER_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 } ?? "system"
        return chosen == "system" ? .system : .address(chosen)
    }

    /// Connects, runs `body`, closes; a control-API failure is reported on stderr and becomes its exit code.
    func withGateway<T: Sendable>(
        callTimeout: Duration = .seconds(25), _ body: (GatewayClient) async throws -> T
    ) async throws -> T {
        let client: GatewayClient
        do {
            client = try await GatewayClient.connect(to: address(), callTimeout: callTimeout)
        } catch let error as GatewayControlError {
            throw ControlFailureReport(error).exit()
        }
        do {
            let result = try await body(client)
            await client.close()
            return result
        } catch let error as GatewayControlError {
            await client.close()
            throw ControlFailureReport(error).exit()
        } catch {
            await client.close()
            throw error
        }
    }
}
