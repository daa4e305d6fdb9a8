import DBus
import Foundation
import Glibc
import Testing

extension DBusIntegrationTests {
    /// Unix fd passing both ways over socketpairs, as BlueZ's AcquireNotify / AcquireWrite need it.
    @Suite struct UnixFDPassing {
        @Test func tetherReceivesAndSendsDescriptorsToPython() async throws {
            try await withPrivateBus { bus, connection in
                let service = try await startPythonService(bus: bus, connection: connection)
                defer { service.kill() }
                let peer = "com.example.Peer"
                #expect(connection.canPassUnixFDs, "Unix-socket buses negotiate fd passing")

                // Python keeps one end of its socketpair, writes, and hands the other end to Tether.
                let reply = try await connection.call(destination: peer, path: "/peer", interface: peer, member: "MakeSocket")
                let received = try #require(reply.first?.fileDescriptorValue)
                #expect(try received.receive() == "from-python")

                // Tether writes on one end and hands the other to Python, which reads it.
                let (ours, theirs) = try SocketPair.make()
                try ours.send("from-tether")
                let read = try await connection.call(
                    destination: peer, path: "/peer", interface: peer, member: "ReadSocket", arguments: [.unixFD(theirs)])
                #expect(read == [.string("from-tether")])
                // Sending duplicated the descriptor: Tether's end is still open and still connected.
                try ours.send("still-connected")
                #expect(try theirs.receive() == "still-connected")
            }
        }

        @Test func pythonAcquiresADescriptorFromATetherMethod() async throws {
            try await withPrivateBus { bus, connection in
                try await connection.objectServer.export([EchoObject().interface], at: EchoObject.path)
                let output = try await PythonPeer.run(PeerScripts.acquireClient, [bus.address, connection.uniqueName])
                #expect(output.status == 0, "\(output.standardError)")
                let json = try JSONSerialization.jsonObject(with: Data(output.standardOutput.utf8)) as? [String: Any]
                #expect(json?["mtu"] as? Int == 23)
                #expect(json?["packets"] as? [String] == ["first", "second"], "one read per packet, like AcquireNotify")
            }
        }

        @Test func droppedDescriptorsAreClosed() async throws {
            try await withPrivateBus { bus, connection in
                try await connection.objectServer.export([EchoObject().interface], at: EchoObject.path)
                let client = try await DBusConnection.connect(to: .address(bus.address))
                func acquire() async throws -> [DBusValue] {
                    try await client.call(
                        destination: connection.uniqueName, path: EchoObject.path, interface: EchoObject.interfaceName,
                        member: "Acquire")
                }
                // Warm up (first-use allocations), then count.
                _ = try await acquire()
                let before = ProcessResources.openDescriptors
                for _ in 0..<50 {
                    let reply = try await acquire()
                    #expect(reply.first?.fileDescriptorValue?.rawValue != nil)
                }
                let after = ProcessResources.openDescriptors
                // Parallel run: other suites open and close descriptors meanwhile (10 once); a leak per reply leaves 50.
                let slack = ProcessResources.leakSlack(parallel: 25)
                #expect(after - before <= slack, "50 replies carrying fds, \(after - before) descriptors left open")
                await client.close()
            }
        }
    }
}
