import DBus
import Foundation
import Synchronization
import Testing

extension DBusIntegrationTests {
    /// A client that pipelines calls (sends the next before the previous is answered, as bleak does with
    /// WriteValue) must see them handled in the order it sent them; `.concurrent` methods must not wait.
    @Suite struct OrderedDispatch {
        /// Handlers that finish in reverse order of their start if run concurrently: the earliest call sleeps
        /// longest. Ordered dispatch must still record 0, 1, 2, ...
        final class Journal: Sendable {
            let entries = Mutex<[UInt32]>([])
            let running = Mutex(0)
            let mostRunning = Mutex(0)
            /// Appends the concurrent Wait saw handled when it returned (nil until it returns).
            let appendsSeenByWait = Mutex<Int?>(nil)
            let count: Int

            init(count: Int) { self.count = count }
        }

        static let path: DBusObjectPath = "/ordered"
        static let interfaceName = "com.example.Ordered"

        static func interface(_ journal: Journal) -> DBusInterface {
            DBusInterface(
                name: interfaceName,
                methods: [
                    DBusMethod("Append", inputs: [DBusArgument("n", "u")]) { call in
                        let n = call.arguments[0].uint32Value ?? 0
                        let now = journal.running.withLock { $0 += 1; return $0 }
                        journal.mostRunning.withLock { $0 = max($0, now) }
                        // Earlier calls take longer: concurrent handling would reverse the journal.
                        try await Task.sleep(for: .milliseconds(Int(20 - min(n, 20))))
                        journal.entries.withLock { $0.append(n) }
                        journal.running.withLock { $0 -= 1 }
                        return []
                    },
                    DBusMethod("Wait", dispatch: .concurrent) { _ in
                        // Returns once every Append behind it is handled (bounded): had they waited for this
                        // call, it would see none of them and give up at the bound instead.
                        let deadline = ContinuousClock.now + .seconds(20)
                        while journal.entries.withLock({ $0.count }) < journal.count, ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(5))
                        }
                        journal.appendsSeenByWait.withLock { $0 = journal.entries.withLock { $0.count } }
                        return []
                    },
                ])
        }

        static let pipeliningClient = #"""
            address, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
            bus = dbus.bus.BusConnection(address)
            proxy = bus.get_object(name, '/ordered')
            loop = GLib.MainLoop()
            state = {'replies': 0, 'errors': []}
            def done():
                state['replies'] += 1
                if state['replies'] == count:
                    loop.quit()
            def failed(e):
                state['errors'].append(str(e))
                done()
            # A concurrent Wait first: the Appends behind it must not wait for it.
            proxy.Wait(dbus_interface='com.example.Ordered', reply_handler=lambda: None, error_handler=lambda e: None)
            for n in range(count):
                proxy.Append(dbus.UInt32(n), dbus_interface='com.example.Ordered', reply_handler=done, error_handler=failed)
            GLib.timeout_add(20000, loop.quit)
            loop.run()
            print(json.dumps(state))
            """#

        @Test func pipelinedCallsOfOneSenderAreHandledInOrder() async throws {
            try await withPrivateBus { bus, connection in
                let count = 40
                let journal = Journal(count: count)
                try await connection.objectServer.export([Self.interface(journal)], at: Self.path)
                let output = try await PythonPeer.run(
                    Self.pipeliningClient, [bus.address, connection.uniqueName, String(count)])
                #expect(output.status == 0, "\(output.standardError)")
                let state = try JSONSerialization.jsonObject(with: Data(output.standardOutput.utf8)) as? [String: Any]
                #expect(state?["replies"] as? Int == count)
                #expect((state?["errors"] as? [String])?.isEmpty == true)
                #expect(journal.entries.withLock { $0 } == (0..<UInt32(count)).map { $0 })
                #expect(journal.mostRunning.withLock { $0 } == 1)
                // `.concurrent`: the Wait sent first was still running while all 40 Appends were handled.
                let deadline = ContinuousClock.now + .seconds(20)
                while journal.appendsSeenByWait.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                #expect(journal.appendsSeenByWait.withLock { $0 } == count)
                #expect(connection.objectServer.sendersWithPendingCalls == 0)
            }
        }
    }
}
