import DBus
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `tetherd` as a child process: a real daemon to SIGTERM, with its stderr in a log file.
///
/// Spawned with posix_spawn and an empty signal mask: a child started from a Swift concurrency thread would
/// otherwise inherit that thread's blocked SIGTERM and never see the signal the test sends.
final class DaemonProcess: @unchecked Sendable {
    let pid: pid_t
    let log: String
    private var exitStatus: Int32?

    static var executable: String? {
        if let path = ProcessInfo.processInfo.environment["TETHERD_BINARY"] { return path }
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [products, products.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("tetherd").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Starts `tetherd arguments…`; `environment` is added to this process's.
    init(arguments: [String], environment: [String: String] = [:], log: String) throws {
        let binary = try #require(Self.executable, "tetherd was not built next to the tests")
        self.log = log
        pid = try Self.spawn(binary, arguments: arguments, environment: environment, log: log)
    }

    static func spawn(_ binary: String, arguments: [String], environment: [String: String], log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { $1 }
        let argv = ([binary] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, binary, &actions, &attributes, argv, envp)
        guard result == 0 else { throw DaemonTestError("posix_spawn \(binary): \(String(cString: strerror(result)))") }
        return pid
    }

    func signal(_ signal: Int32) { Glibc.kill(pid, signal) }

    /// Waits (bounded, polling) for the process to exit and returns its exit code; -signal if killed.
    func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        if let exitStatus { return exitStatus }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : -(status & 0x7f)
                exitStatus = code
                return code
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw DaemonTestError("tetherd (pid \(pid)) did not exit within \(timeout); log:\n\(logText)")
    }

    /// SIGKILL and reap, for cleanup after a failed test.
    func kill() {
        guard exitStatus == nil else { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        exitStatus = -SIGKILL
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    deinit { kill() }
}

struct DaemonTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds or `timeout` passes (then fails with `what`). Event-driven enough for
/// process boundaries; never asserts a duration.
func waitUntil(_ what: String, timeout: Duration = .seconds(60), every interval: Duration = .milliseconds(100),
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if (try? await condition()) == true { return }
        try await Task.sleep(for: interval)
    }
    if try await condition() { return }
    throw DaemonTestError("timed out waiting for \(what)")
}

/// A fresh temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "tetherd-test-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw DaemonTestError("mkdtemp failed") }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func write(_ name: String, _ contents: String, mode: mode_t = 0o644) throws -> String {
        let target = file(name)
        try contents.write(toFile: target, atomically: false, encoding: .utf8)
        chmod(target, mode)
        return target
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs `body` with a bound: a signal that never comes fails the test instead of hanging it.
func within<T: Sendable>(_ timeout: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw DaemonTestError("timed out waiting for \(what)") }
        return value
    }
}
