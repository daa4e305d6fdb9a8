import Foundation
import Synchronization
import Glibc
import Testing
import TetherTestSupport

@Suite("ChildProcess: started as a shell would start it")
struct ChildProcessTests {
    /// Bits of a /proc/PID/status signal mask line (SigBlk, SigIgn), as a set of signal numbers.
    static func signals(_ field: String, of pid: pid_t) throws -> Set<Int32> {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        let mask = try #require(UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16))
        return Set((1...64).filter { mask & (1 << UInt64($0 - 1)) != 0 }.map(Int32.init))
    }

    /// Starts `sleep` from a thread that blocks SIGTERM and SIGUSR1 and holds a descriptor without CLOEXEC (as
    /// a Swift concurrency thread and another test's pipe would), then reads the child's /proc entries.
    @Test("the child has an empty signal mask, default dispositions and descriptors 0, 1 and 2 only")
    func cleanStart() async throws {
        let started = Shared<Result<ChildProcess, any Error>?>(nil)
        let leaked = Shared<[Int32]>([])
        let thread = Thread {
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGTERM)
            sigaddset(&blocked, SIGUSR1)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            var descriptors: [Int32] = [0, 0]
            pipe(&descriptors)
            leaked.value.withLock { $0 = descriptors }
            started.value.withLock { $0 = Result { try ChildProcess("/bin/sleep", ["30"]) } }
        }
        thread.start()
        try await waitUntil("the spawning thread") { started.value.withLock { $0 != nil } }
        defer { leaked.value.withLock { $0.forEach { close($0) } } }
        let child = try #require(started.value.withLock { $0 }).get()
        defer { child.kill() }
        // The parent's own view: the leak and the blocked signals are real, so the checks below say something.
        let parentDescriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        #expect(parentDescriptors.count > 3)

        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(child.pid)/fd").compactMap { Int32($0) }.sorted()
        #expect(descriptors == [0, 1, 2])
        #expect(try Self.signals("SigBlk", of: child.pid).isEmpty)
        let ignored = try Self.signals("SigIgn", of: child.pid)
        #expect(ignored.isDisjoint(with: [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGCHLD]), "\(ignored)")

        // SIGTERM reaches it (nothing blocks it), and the status says how it ended.
        child.signal(SIGTERM)
        #expect(try await child.wait(timeout: .seconds(30)) == 128 + SIGTERM)
        #expect(!child.isRunning)
    }

    @Test("stdout and stderr apart, the exit code, stdin, the working directory and the environment")
    func capture() async throws {
        let result = try await ChildProcess.run(
            "/bin/sh", ["-c", "echo out; echo err >&2; pwd; echo \"$GREETING\"; cat; exit 3"],
            environment: ChildProcess.environment(["GREETING": "hello", "HOME": nil]), directory: "/usr", input: .text("typed\n"))
        #expect(result.status == 3)
        #expect(result.lines == ["out", "/usr", "hello", "typed"])
        #expect(result.standardError == "err\n")
        let blocking = try ChildProcess.runBlocking("/bin/sh", ["-c", "echo $HOME; exit 0"], environment: ChildProcess.environment(["HOME": nil]))
        #expect(blocking.status == 0 && blocking.standardOutput == "\n")
    }

    @Test("a log file gets stdout and stderr while the child runs")
    func logFile() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).log").path
        defer { unlink(log) }
        let child = try ChildProcess("/bin/sh", ["-c", "echo one; echo two >&2; exec sleep 30"], output: .file(log))
        defer { child.kill() }
        try await waitUntil("both lines in the log") { child.standardOutput == "one\ntwo\n" }
        #expect(child.isRunning)
    }

    @Test("a bounded wait throws and leaves the child running; finish kills it after its timeout")
    func bounds() async throws {
        let child = try ChildProcess("/bin/sleep", ["30"])
        await #expect(throws: WaitTimeout.self) { try await child.wait(timeout: .milliseconds(100)) }
        #expect(child.isRunning)
        let result = try await child.finish(timeout: .milliseconds(100))
        #expect(result.status == 128 + SIGKILL)
        child.kill()  // after the exit: nothing to do, nothing signalled
        #expect(child.status == 128 + SIGKILL)
    }

    @Test("a program that cannot start throws")
    func missing() {
        #expect(throws: ChildProcess.Failure.self) { try ChildProcess("/nonexistent/program", []) }
    }
}

@Suite("BuiltProducts")
struct BuiltProductsTests {
    @Test("finds what the build put beside the test bundle, and an override wins")
    func locate() throws {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0])
        #expect(BuiltProducts.path(bundle.lastPathComponent) == bundle.path)
        #expect(BuiltProducts.path("no-such-product-\(UUID().uuidString)") == nil)
        #expect(throws: BuiltProducts.NotBuilt.self) { try BuiltProducts.require("no-such-product") }
        #expect(BuiltProducts.path("no-such-product", override: "PATH") == ProcessInfo.processInfo.environment["PATH"])
    }
}

/// A mutex a closure can capture (a `Mutex` itself cannot be copied into one).
final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
