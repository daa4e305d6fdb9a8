import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to completion with posix_spawn and waitpid, its output captured in a temporary file. Unlike
/// Foundation's `Process`, nothing here depends on a run loop noticing SIGCHLD, and a daemon the program leaves
/// behind (pg_ctl's postmaster) cannot hold a pipe open.
public enum Subprocess {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    /// glibc 2.34+ has it, but its header hides it behind _GNU_SOURCE, so Swift's Glibc module does not export it.
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddCloseFrom.self) }

    public static func run(_ executable: String, _ arguments: [String], directory: String? = nil) throws -> (status: Int32, output: String) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("tether-spawn-\(UUID().uuidString).log").path
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The child gets stdin, stdout and stderr, nothing else. Without this it inherits every descriptor the test
        // process has open without CLOEXEC, and a daemon it leaves behind (pg_ctl's postmaster) keeps them open
        // for good: another test's socket to a child it killed then never reports EOF (the store's crash test
        // stalled this way when the PostgreSQL suites started their cluster beside it).
        guard let closeFrom = Self.addCloseFrom else { throw Failure(description: "posix_spawn_file_actions_addclosefrom_np is missing (glibc < 2.34)") }
        let closing = closeFrom(&actions, 3)
        guard closing == 0 else { throw Failure(description: "posix_spawn_file_actions_addclosefrom_np: \(String(cString: strerror(closing)))") }
        // `env -C` (coreutils) changes directory before exec: the Glibc module does not export addchdir_np.
        let command = directory.map { ["/usr/bin/env", "-C", $0, executable] } ?? [executable]
        let argv = (command + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "cannot start \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Failure(description: "waitpid: \(String(cString: strerror(errno)))") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output)
    }
}
