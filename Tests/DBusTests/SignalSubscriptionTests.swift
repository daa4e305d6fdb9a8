import DBus
import Foundation
import Testing
import TetherTestSupport

extension DBusIntegrationTests {
    /// Signal subscriptions: match rules on the bus, local routing per subscription, well-known senders, and
    /// the rule's removal when the stream ends.
    @Suite struct SignalSubscriptions {
        @Test func eachSubscriptionSeesOnlyWhatItsRuleMatches() async throws {
            try await withPrivateBus { bus, connection in
                let service = try await startPythonService(bus: bus, connection: connection)
                defer { service.kill() }
                let peer = "com.example.Peer"
                let byPeer = try await connection.signals(
                    matching: DBusMatchRule(sender: peer, interface: peer, member: "Pinged", path: "/peer"))
                let inNamespace = try await connection.signals(matching: DBusMatchRule(pathNamespace: "/peer"))
                let byArgument = try await connection.signals(
                    matching: DBusMatchRule(interface: peer, member: "Pinged", arguments: [0: "four"]))
                let done = try await connection.signals(matching: DBusMatchRule(sender: peer, member: "Done"))

                // Another connection emits the same signal as the peer: only sender-less rules may see it.
                let impostor = try await DBusConnection.connect(to: .address(bus.address))
                try impostor.emitSignal(path: "/peer", interface: peer, member: "Pinged", arguments: [.string("impostor")])
                // A round trip to the bus after the signal: the bus has routed the signal before answering.
                _ = try await impostor.listNames()

                _ = try await connection.call(destination: peer, path: "/peer", interface: peer, member: "EmitMany")
                let finished = try await collect(1, from: done)
                let owner = try await connection.nameOwner(of: peer)
                #expect(finished.first?.sender == owner)
                #expect(finished.first?.sender != nil)

                func texts(_ signals: [DBusSignal]) -> [String] { signals.compactMap { $0.arguments.first?.stringValue } }
                #expect(texts(try await collect(1, from: byPeer)) == ["one"])
                let namespaced = try await collect(5, from: inNamespace)
                #expect(texts(namespaced) == ["impostor", "one", "two", "three"])
                #expect(namespaced.map(\.member) == ["Pinged", "Pinged", "OtherPinged", "Pinged", "Done"])
                #expect(namespaced.map(\.interface) == [peer, peer, "com.example.Other", peer, peer])
                #expect(namespaced.map(\.path) == ["/peer", "/peer", "/peer", "/peer/child", "/peer"])
                #expect(texts(try await collect(1, from: byArgument)) == ["four"])
                await impostor.close()
            }
        }

        @Test func endingTheStreamRemovesTheMatchRule() async throws {
            try await withPrivateBus { bus, connection in
                func matchRules() async throws -> UInt32? {
                    let stats = try await connection.call(
                        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                        interface: "org.freedesktop.DBus.Debug.Stats", member: "GetConnectionStats",
                        arguments: [.string(connection.uniqueName)])
                    return stats.first?.variantDictionaryValue?["MatchRules"]?.uint32Value
                }
                let before = try #require(try await matchRules())
                do {
                    // A well-known sender costs one more rule: its NameOwnerChanged, for owner tracking.
                    let stream = try await connection.signals(matching: DBusMatchRule(sender: "com.example.Nobody"))
                    let during = try await matchRules()
                    #expect(during == before + 2)
                    withExtendedLifetime(stream) {}
                }
                // The stream is gone; its RemoveMatch was queued before this call, so the bus has processed it.
                let after = try await matchRules()
                #expect(after == before)

                // Cancelling the task that iterates a stream ends it too.
                let stream = try await connection.signals(matching: DBusMatchRule(interface: "com.example.Iterated"))
                let during = try await matchRules()
                #expect(during == before + 1)
                let iterating = Task { for await _ in stream {} }
                iterating.cancel()
                await iterating.value
                let afterCancel = try await matchRules()
                #expect(afterCancel == before)
            }
        }

        @Test func unicastSignalsReachOnlyTheirDestination() async throws {
            try await withPrivateBus { bus, connection in
                let other = try await DBusConnection.connect(to: .address(bus.address))
                let emitter = try await DBusConnection.connect(to: .address(bus.address))
                let rule = DBusMatchRule(interface: "com.example.Direct")
                let mine = try await connection.signals(matching: rule)
                let theirs = try await other.signals(matching: rule)
                try emitter.emitSignal(
                    path: "/", interface: "com.example.Direct", member: "Hello", arguments: [.uint32(1)],
                    destination: connection.uniqueName)
                try emitter.emitSignal(path: "/", interface: "com.example.Direct", member: "Hello", arguments: [.uint32(2)])
                let received = try await collect(2, from: mine)
                #expect(received.map(\.arguments) == [[.uint32(1)], [.uint32(2)]])
                #expect(received.first?.destination == connection.uniqueName)
                let otherReceived = try await collect(1, from: theirs)
                #expect(otherReceived.map(\.arguments) == [[.uint32(2)]], "the unicast one never reached them")
                await other.close()
                await emitter.close()
            }
        }

        @Test func signalsFromDBusSendAreDecoded() async throws {
            try await withPrivateBus { bus, connection in
                // dbus-send as an independent sender: Tether decodes what it emits. (--bus registers with the
                // bus; --address would talk to it as a peer that never said Hello.)
                let stream = try await connection.signals(matching: DBusMatchRule(interface: "com.example.Sent"))
                let output = try await ChildProcess.run(
                    "/usr/bin/dbus-send",
                    ["--bus=\(bus.address)", "--type=signal", "/sent/here", "com.example.Sent.Thing",
                     "string:hello", "int16:-5", "array:byte:1,2,3", "dict:string:uint32:a,1,b,2", "variant:boolean:true"])
                #expect(output.status == 0, "\(output.standardError)")
                let received = try await collect(1, from: stream)
                #expect(received.first?.path == "/sent/here")
                #expect(received.first?.member == "Thing")
                #expect(received.first?.arguments == [
                    .string("hello"), .int16(-5), .bytes([1, 2, 3]),
                    .dictionary(keySignature: "s", valueSignature: "u", [
                        DBusDictionaryEntry(key: .string("a"), value: .uint32(1)),
                        DBusDictionaryEntry(key: .string("b"), value: .uint32(2)),
                    ]),
                    .variant(.bool(true)),
                ])
            }
        }
    }
}
