import DBus
import Foundation
import Testing
import TetherTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `tetherd` as a child process: a real daemon to SIGTERM, with its stdout and stderr in a log file.
final class DaemonProcess: Sendable {
    let child: ChildProcess
    let log: String

    /// Starts `tetherd arguments…` (the built one, or TETHERD_BINARY); `environment` is added to this process's.
    init(arguments: [String], environment: [String: String] = [:], log: String) throws {
        let binary = try BuiltProducts.require("tetherd", override: "TETHERD_BINARY")
        self.log = log
        child = try ChildProcess(binary, arguments, environment: ChildProcess.environment(environment), output: .file(log))
    }

    var pid: pid_t { child.pid }

    func signal(_ signal: Int32) { child.signal(signal) }

    /// Waits (bounded) for the process to exit and returns its exit code; 128 + the signal if one killed it.
    func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        do {
            return try await child.wait(timeout: timeout)
        } catch {
            throw DaemonTestError("tetherd (pid \(pid)) did not exit within \(timeout); log:\n\(logText)")
        }
    }

    /// SIGKILL and reap, for cleanup after a failed test.
    func kill() { child.kill() }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
}

struct DaemonTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
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
