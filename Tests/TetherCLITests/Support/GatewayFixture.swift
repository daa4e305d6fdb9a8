import DBus

/// A private dbus-daemon with a `ContractGateway` on it, torn down after `body`.
func withContractGateway<T>(
    _ state: ContractGateway.State = .sample, _ body: (_ bus: String, _ gateway: ContractGateway) async throws -> T
) async throws -> T {
    let bus = try await DBusPrivateBus.start()
    defer { bus.stop() }
    let gateway = try await ContractGateway.start(on: bus, state: state)
    do {
        let result = try await body(bus.address, gateway)
        await gateway.close()
        return result
    } catch {
        await gateway.close()
        throw error
    }
}
