import Testing
import TetherFirmware

/// The one UDP socket type's binding rule: a port in use is an error, never shared (two simulated devices, or two
/// tests' devices, on one port would split each other's datagrams: a CI flake of FirmwareCLIOverUDPTests).
struct UDPSocketTests {
    @Test func aPortInUseIsRefusedNotShared() throws {
        let first = try UDPSocket(bindHost: "127.0.0.1", port: 0)
        let port = first.localPort
        #expect(port != 0)
        #expect(throws: UDPSocket.Failure.self) { _ = try UDPSocket(bindHost: "127.0.0.1", port: port) }
        // Many kernel-picked ports at once are all different.
        let sockets = try (0..<64).map { _ in try UDPSocket(bindHost: "127.0.0.1", port: 0) }
        #expect(Set(sockets.map(\.localPort) + [port]).count == 65)
    }
}
