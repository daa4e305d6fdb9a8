import DBus
import Foundation
import Synchronization
import Testing
import TetherTestSupport

/// `DBusWireConnection` against a real dbus-daemon, with libdbus connections (`DBusConnection`) as the peers:
/// calls, errors, batched signal delivery, sender trust, rule removal, and the bus going away.
@Suite struct WireConnectionTests {
    @Test func callsRepliesAndErrorsMatchWhatTheLibdbusPeerSent() async throws {
        try await withPrivateBus { bus, connection in
            let echo = EchoObject()
            try await connection.objectServer.export([echo.interface], at: EchoObject.path)
            let wire = try await DBusWireConnection.connect(to: .address(bus.address))
            #expect(wire.uniqueName.hasPrefix(":"))
            #expect(try await connection.listNames().contains(wire.uniqueName))

            for (index, value) in MessageRoundTripTests.values.enumerated() {
                let reply = try await wire.call(
                    destination: connection.uniqueName, path: EchoObject.path, interface: EchoObject.interfaceName,
                    member: "Echo", arguments: [.string("v\(index)"), .variant(value)])
                #expect(reply == [.variant(value)])
                #expect(echo.echoed["v\(index)"] == .variant(value))
            }

            let unknown = await #expect(throws: DBusError.self) {
                try await wire.call(
                    destination: connection.uniqueName, path: EchoObject.path, interface: EchoObject.interfaceName,
                    member: "NoSuchMethod")
            }
            #expect(unknown?.code == .unknownMethod)
            let nobody = await #expect(throws: DBusError.self) {
                try await wire.call(destination: "com.example.Nobody", path: "/", interface: nil, member: "M")
            }
            #expect(nobody?.code == .serviceUnknown)

            // Like libdbus, the wire connection answers Peer.Ping itself and refuses everything else.
            _ = try await connection.call(
                destination: wire.uniqueName, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
            let refused = await #expect(throws: DBusError.self) {
                try await connection.call(
                    destination: wire.uniqueName, path: "/x", interface: "com.example.X", member: "Y")
            }
            #expect(refused?.code == .unknownObject)
            await wire.close()
            #expect(!wire.isConnected)
        }
    }

    @Test func aCallWhoseReplyDoesNotComeInTimeFailsWithNoReply() async throws {
        try await withPrivateBus { bus, connection in
            let (announce, announced) = AsyncStream.makeStream(of: Void.self)
            try await connection.objectServer.export(
                [DBusIntegrationTests.Disconnection.stallingInterface(announce: announced)], at: "/stall")
            let wire = try await DBusWireConnection.connect(to: .address(bus.address))
            let error = await #expect(throws: DBusError.self) {
                try await wire.call(
                    destination: connection.uniqueName, path: "/stall", interface: "com.example.Stall",
                    member: "Stall", timeout: .milliseconds(300))
            }
            #expect(error?.code == .noReply)
            _ = try await collect(1, from: announce)
            // The connection goes on working after a call expired.
            _ = try await wire.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetId")
            await wire.close()
        }
    }

    /// A call from a task that is already cancelled is never sent (the stalling method is never entered) and
    /// ends at once with `CancellationError`, not after the call's timeout.
    @Test func aCancelledTasksCallIsNeverSent() async throws {
        try await withPrivateBus { bus, connection in
            let (announce, announced) = AsyncStream.makeStream(of: Void.self)
            try await connection.objectServer.export(
                [DBusIntegrationTests.Disconnection.stallingInterface(announce: announced)], at: "/stall")
            let wire = try await DBusWireConnection.connect(to: .address(bus.address))
            let destination = connection.uniqueName
            let outcome = try await within(.seconds(30), "the cancelled call to end") {
                let calling = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await wire.call(
                        destination: destination, path: "/stall", interface: "com.example.Stall", member: "Stall")
                }
                return await calling.result
            }
            #expect(throws: CancellationError.self) { try outcome.get() }
            // The barrier: a later call from the same connection to the same service. Messages of one sender
            // arrive in order and its calls are handled one at a time, so had Stall been sent, this call would
            // wait behind it (an hour) instead of being answered.
            try await connection.objectServer.export(
                [DBusInterface(name: "com.example.Barrier", methods: [DBusMethod("Echo") { _ in [] }])], at: "/barrier")
            _ = try await within(.seconds(30), "the call after the cancelled one (Stall would hold it)") {
                try await wire.call(destination: destination, path: "/barrier", interface: "com.example.Barrier", member: "Echo")
            }
            announced.finish()
            var entries = 0
            for await _ in announce { entries += 1 }
            #expect(entries == 0, "the stalling method was entered")
            await wire.close()
        }
    }

    @Test func signalBatchesArriveInOrderOnlyFromTheNameOwner() async throws {
        try await withPrivateBus { bus, connection in
            let name = "com.example.Streamer"
            _ = try await connection.requestName(name)
            let wire = try await DBusWireConnection.connect(to: .address(bus.address))
            let stream = try await wire.signalBatches(
                matching: DBusMatchRule(sender: name, interface: "com.example.Stream", member: "Tick", path: "/s"),
                of: UInt32.self
            ) { signal, batch in
                guard signal.hasSignature("u"), case .uint32(let value)? = try signal.arguments().first else {
                    return .keep
                }
                batch.append(value)
                return value == 499 ? .end : .keep
            }

            // An impostor without the name: its broadcast and its unicast to the wire connection must not pass.
            let impostor = try await DBusConnection.connect(to: .address(bus.address))
            try impostor.emitSignal(path: "/s", interface: "com.example.Stream", member: "Tick", arguments: [.uint32(9999)])
            try impostor.emitSignal(
                path: "/s", interface: "com.example.Stream", member: "Tick", arguments: [.uint32(8888)],
                destination: wire.uniqueName)
            _ = try await impostor.listNames()

            for value in UInt32(0)..<500 {
                try connection.emitSignal(
                    path: "/s", interface: "com.example.Stream", member: "Tick", arguments: [.uint32(value)])
            }
            let received = try await within(.seconds(60), "500 ticks") {
                var values: [UInt32] = []
                var batches = 0
                for await batch in stream {
                    batches += 1
                    values += batch
                }
                return (values, batches)
            }
            #expect(received.0 == Array(0..<500))
            #expect(received.1 >= 1 && received.1 <= 500)
            await impostor.close()
            await wire.close()
        }
    }

    @Test func endingTheStreamRemovesTheMatchRule() async throws {
        try await withPrivateBus { bus, connection in
            let wire = try await DBusWireConnection.connect(to: .address(bus.address))
            @Sendable func matchRules() async throws -> UInt32? {
                let stats = try await connection.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus.Debug.Stats", member: "GetConnectionStats",
                    arguments: [.string(wire.uniqueName)])
                return stats.first?.variantDictionaryValue?["MatchRules"]?.uint32Value
            }
            let before = try #require(try await matchRules())
            let stream = try await wire.signalBatches(
                matching: DBusMatchRule(interface: "com.example.Iterated"), of: Int.self
            ) { _, batch in
                batch.append(1)
                return .keep
            }
            #expect(try await matchRules() == before + 1)
            let iterating = Task { for await _ in stream {} }
            iterating.cancel()
            await iterating.value
            // The RemoveMatch is queued on the wire connection; wait (bounded) for the bus to have applied it.
            try await within(.seconds(30), "the rule's removal") {
                while try await matchRules() != before { try await Task.sleep(for: .milliseconds(20)) }
            }
            await wire.close()
        }
    }

    @Test func theBusGoingAwayEndsStreamsAndFailsCalls() async throws {
        let bus = try await DBusPrivateBus.start()
        let wire = try await DBusWireConnection.connect(to: .address(bus.address))
        let stream = try await wire.signalBatches(matching: DBusMatchRule(interface: "com.example.Any"), of: Int.self) {
            _, _ in .keep
        }
        bus.stop()
        try await within(.seconds(30), "the stream to finish") {
            for await _ in stream {}
        }
        await wire.waitUntilDisconnected()
        #expect(!wire.isConnected)
        await #expect(throws: DBusError.self) {
            try await wire.call(destination: "org.freedesktop.DBus", path: "/", interface: nil, member: "Ping")
        }
    }

    @Test func connectingToNothingSaysWhere() async throws {
        let error = await #expect(throws: DBusError.self) {
            try await DBusWireConnection.connect(to: .address("unix:path=/nonexistent/tether-test-bus"))
        }
        #expect(error?.description.contains("/nonexistent/tether-test-bus") == true)
    }
}
