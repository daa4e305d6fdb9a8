import DBus
import Foundation
import Glibc
import Synchronization
import Testing
import TetherTestSupport

/// Starts a private dbus-daemon and one Tether connection on it, and tears both down after `body`.
func withPrivateBus<Result>(
    _ body: (DBusPrivateBus, DBusConnection) async throws -> Result
) async throws -> Result {
    let bus = try await DBusPrivateBus.start()
    defer { bus.stop() }
    let connection = try await DBusConnection.connect(to: .address(bus.address))
    do {
        let result = try await body(bus, connection)
        await connection.close()
        return result
    } catch {
        await connection.close()
        throw error
    }
}

/// The first `count` elements of `stream` that satisfy `predicate`, failing after `timeout` (and then saying
/// what did arrive).
func collect<Element: Sendable>(
    _ count: Int,
    from stream: AsyncStream<Element>,
    timeout: Duration = .seconds(10),
    where predicate: @escaping @Sendable (Element) -> Bool = { _ in true }
) async throws -> [Element] {
    let collected = Collected<Element>()
    let complete = try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await element in stream where predicate(element) {
                let done = collected.elements.withLock { elements in
                    elements.append(element)
                    return elements.count == count
                }
                if done { return true }
            }
            return true
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return false
        }
        defer { group.cancelAll() }
        return try await group.next() ?? false
    }
    let elements = collected.elements.withLock { $0 }
    guard complete else {
        throw WaitTimeout(what: "\(count) element(s); received \(elements.count): \(elements)")
    }
    return elements
}

private final class Collected<Element: Sendable>: Sendable {
    let elements = Mutex<[Element]>([])
}

/// Waits until `name` has an owner, having subscribed before `start` is called so the change cannot be missed.
func awaitNameOwner(
    _ name: String,
    on connection: DBusConnection,
    timeout: Duration = .seconds(15),
    after start: () throws -> Void
) async throws -> String {
    let changes = try await connection.nameOwnerChanges(of: name)
    try start()
    let change = try await collect(1, from: changes, timeout: timeout) { $0.newOwner != nil }
    guard let owner = change.first?.newOwner else { throw WaitTimeout(what: "an owner of \(name)") }
    return owner
}

/// Open file descriptors and threads of this process, from /proc.
enum ProcessResources {
    static var openDescriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// Resident set size (the second field of /proc/self/statm, in pages).
    static var residentBytes: Int {
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static var threads: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    /// How far the process's descriptor and thread counts may end above where a leak check started. The counts are
    /// the whole process's: in the parallel run other suites open and close descriptors and threads while a check
    /// runs, so there the bound (`parallel`) only stops a leak per cycle. scripts/test.sh runs the leak checks again
    /// in a step of their own (`TETHER_SERIAL_LEAK_CHECKS=1`, nothing else in the process), where the counts must
    /// come back to within 2 (a leak check runs 50 to 200 cycles).
    static func leakSlack(parallel: Int) -> Int { serialLeakChecks ? 2 : parallel }

    static var serialLeakChecks: Bool { ProcessInfo.processInfo.environment["TETHER_SERIAL_LEAK_CHECKS"] == "1" }
}
