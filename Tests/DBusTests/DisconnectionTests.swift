import DBus
import Foundation
import Glibc
import Synchronization
import Testing
import TetherTestSupport

extension DBusIntegrationTests {
    /// The bus going away, closing, and what a connection leaves behind.
    @Suite struct Disconnection {
        /// An object whose method announces that it was called and then never answers.
        static func stallingInterface(announce: AsyncStream<Void>.Continuation) -> DBusInterface {
            DBusInterface(
                name: "com.example.Stall",
                methods: [
                    DBusMethod("Stall") { _ in
                        announce.yield()
                        try await Task.sleep(for: .seconds(3600))
                        return []
                    }
                ])
        }

        @Test func killingTheBusMidCallEndsEverythingWithDisconnected() async throws {
            let bus = try await DBusPrivateBus.start()
            defer { bus.stop() }
            let caller = try await DBusConnection.connect(to: .address(bus.address))
            let server = try await DBusConnection.connect(to: .address(bus.address))
            let (calls, announce) = AsyncStream.makeStream(of: Void.self)
            try await server.objectServer.export([Self.stallingInterface(announce: announce)], at: "/stall")
            let signals = try await caller.signals(matching: DBusMatchRule(interface: "com.example.Anything"))

            let pending = Task {
                try await caller.call(
                    destination: server.uniqueName, path: "/stall", interface: "com.example.Stall", member: "Stall",
                    timeout: .seconds(60))
            }
            _ = try await collect(1, from: calls)  // the call reached the other side
            #expect(kill(bus.processIdentifier, SIGKILL) == 0)

            let outcome = try await within(.seconds(30), "the pending call to fail") { await pending.result }
            #expect(throws: DBusError(.disconnected, "")) { try outcome.get() }
            try await within(.seconds(30), "the signal stream to finish") {
                for await _ in signals {}
            }
            try await within(.seconds(30), "both connections to notice") {
                await caller.waitUntilDisconnected()
                await server.waitUntilDisconnected()
            }
            #expect(!caller.isConnected)
            await #expect(throws: DBusError(.disconnected, "")) {
                _ = try await caller.listNames()
            }
            #expect(throws: DBusError(.disconnected, "")) {
                try caller.emitSignal(path: "/", interface: "com.example.Gone", member: "Late")
            }
            await #expect(throws: DBusError(.disconnected, "")) {
                _ = try await caller.signals(matching: DBusMatchRule(member: "Late"))
            }
            await caller.close()
            await server.close()
        }

        @Test func connectingToNothingFails() async throws {
            await #expect(throws: DBusError.self) {
                _ = try await DBusConnection.connect(to: .address("unix:path=/nonexistent/tether/bus"))
            }
            await #expect(throws: DBusError(.badAddress, "")) {
                _ = try await DBusConnection.connect(to: .address(""))
            }
        }
    }
}
