import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `tether-server serve` in its own process (the release binary next to this one), so the gateway's CPU and the
/// server's are measured apart.
final class ServerChild {
    let pid: pid_t
    let port: Int

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func executable() throws -> String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let path = here.appendingPathComponent("tether-server").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(description: "no tether-server next to \(CommandLine.arguments[0]): swift build -c release --product tether-server")
        }
        return path
    }

    init(arguments: [String], log: String) async throws {
        let binary = try Self.executable()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([binary, "serve"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, binary, &actions, nil, argv, environ)
        guard result == 0 else { throw Failure(description: "cannot start tether-server: \(String(cString: strerror(result)))") }
        self.pid = pid
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").last(where: { $0.hasPrefix("listening on ") }), let port = Int(line.split(separator: ":").last ?? "") {
                self.port = port
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        _ = kill(pid, SIGKILL)
        throw Failure(description: "tether-server did not start; see \(log)")
    }

    var cpuSeconds: Double { ProcessMeter.cpu(pid: pid) }

    func stop() {
        _ = kill(pid, SIGTERM)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }
}
