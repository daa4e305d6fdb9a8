import DBus
import Foundation
import Testing

extension DBusIntegrationTests {
    /// Nothing a connection or a message owns may outlive it: descriptors, threads, libdbus objects.
    ///
    /// Descriptors and threads are counted exactly from /proc. libdbus objects are only visible as memory, so
    /// the memory checks run several rounds after a warm-up and look at the smallest growth: a leaked
    /// connection (~8 KiB) or message (~450 B) grows every round, noise from elsewhere in the process does not.
    @Suite struct ResourceLeaks {
        @Test func connectionsLeaveNoDescriptorsOrThreadsBehind() async throws {
            let bus = try await DBusPrivateBus.start()
            defer { bus.stop() }
            // One full cycle first, so lazily created process-wide resources are not counted as leaks.
            try await Self.connectionCycle(bus: bus)
            let descriptorsBefore = ProcessResources.openDescriptors
            let threadsBefore = ProcessResources.threads
            for _ in 0..<200 {
                try await Self.connectionCycle(bus: bus)
            }
            let descriptorsAfter = ProcessResources.openDescriptors
            let threadsAfter = ProcessResources.threads
            // A leak of one descriptor or thread per cycle shows as 200. In the parallel run other suites' connection
            // threads, AcquireNotify readers and the concurrency pool come and go, a few dozen either way; run alone
            // (scripts/test.sh's serial step) the counts come back to within 2 (ProcessResources.leakSlack).
            let slack = ProcessResources.leakSlack(parallel: 50)
            #expect(descriptorsAfter - descriptorsBefore <= slack, "descriptors \(descriptorsBefore) -> \(descriptorsAfter) over 200 cycles")
            #expect(threadsAfter - threadsBefore <= slack, "threads \(threadsBefore) -> \(threadsAfter) over 200 cycles")
        }

        /// Connect, export, subscribe, call, receive a signal, close.
        static func connectionCycle(bus: DBusPrivateBus) async throws {
            let connection = try await DBusConnection.connect(to: .address(bus.address))
            try await connection.objectServer.export([EchoObject().interface], at: EchoObject.path)
            let stream = try await connection.signals(matching: DBusMatchRule(sender: connection.uniqueName))
            let echoed = try await connection.call(
                destination: connection.uniqueName, path: EchoObject.path, interface: EchoObject.interfaceName,
                member: "Echo", arguments: [.string("cycle"), .variant(.bytes([1, 2, 3]))])
            #expect(echoed == [.variant(.bytes([1, 2, 3]))])
            try connection.emitSignal(path: "/", interface: "com.example.Cycle", member: "Tick")
            _ = try await collect(1, from: stream)
            await connection.close()
        }

        @Test func connectionsAndMessagesDoNotGrowMemory() async throws {
            let bus = try await DBusPrivateBus.start()
            defer { bus.stop() }
            for _ in 0..<50 {
                try await Self.connectionCycle(bus: bus)
            }
            var connectionGrowth: [Int] = []
            for _ in 0..<3 {
                let before = ProcessResources.residentBytes
                for _ in 0..<100 {
                    try await Self.connectionCycle(bus: bus)
                }
                connectionGrowth.append(ProcessResources.residentBytes - before)
            }
            // A connection that is never unreferenced costs ~8 KiB: 800 KiB per round.
            #expect(connectionGrowth.min() ?? .max < 256 * 1024, "resident growth per 100 connections: \(connectionGrowth)")

            let connection = try await DBusConnection.connect(to: .address(bus.address))
            try await connection.objectServer.export([EchoObject().interface], at: EchoObject.path)
            func echo() async throws {
                _ = try await connection.call(
                    destination: connection.uniqueName, path: EchoObject.path, interface: EchoObject.interfaceName,
                    member: "Echo", arguments: [.string("leak"), .variant(.variantDictionary(["k": .bytes([1, 2])]))])
            }
            for _ in 0..<500 {
                try await echo()
            }
            var messageGrowth: [Int] = []
            for _ in 0..<3 {
                let before = ProcessResources.residentBytes
                for _ in 0..<1000 {
                    try await echo()
                }
                messageGrowth.append(ProcessResources.residentBytes - before)
            }
            // Each echo is a call and a reply on both sides: a leaked message per call would be ~900 KiB a round.
            #expect(messageGrowth.min() ?? .max < 256 * 1024, "resident growth per 1000 calls: \(messageGrowth)")
            await connection.close()
        }
    }
}
