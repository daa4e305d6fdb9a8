import DBus
import Foundation
import Synchronization
import Testing

/// Connection threads carry their names into the kernel (issue 12), where `top -H`, `ps -L` and gdb read them.
@Suite struct ThreadNameTests {
    /// The kernel's name of every thread of this process (/proc/self/task/TID/comm, without the newline).
    static var kernelThreadNames: [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines)
        }
    }

    @Test func bothConnectionKindsNameTheirLoopThreadsInTheKernel() async throws {
        try await withPrivateBus { bus, _ in
            let wire = try await DBusWireConnection.connect(to: .address(bus.address))
            // Both connections are open, so both loop threads are running now (other suites' may be too).
            let names = Self.kernelThreadNames
            #expect(names.contains("DBus connection"), "\(names)")
            #expect(names.contains("DBus wire"), "\(names)")
            await wire.close()
        }
    }

    @Test func aThreadNamesItselfAndALongNameIsCutToTheKernelsFifteenBytes() async throws {
        let seen = Mutex<[String]>([])
        for name in ["tether test", "tether test thread 12345"] {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                NamedThread.start(name) {
                    let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
                    seen.withLock { $0.append(comm.trimmingCharacters(in: .newlines)) }
                    done.resume()
                }
            }
        }
        #expect(seen.withLock { $0 } == ["tether test", "tether test thr"])
    }
}
