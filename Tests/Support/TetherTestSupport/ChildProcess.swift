import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A program the tests run (a built product, a system tool, a Python peer), started as a shell would start it.
///
/// Why not Foundation's `Process`: a child started from a Swift concurrency thread inherits that thread's signal
/// mask, which blocks SIGTERM, so a daemon under test never sees the SIGTERM a test sends; and it inherits every
/// descriptor the test process holds without CLOEXEC (other tests' pipes and sockets), so a child or a daemon it
/// leaves behind (pg_ctl's postmaster) can keep another test's socket open for good and that test never sees EOF.
/// Here the child gets an empty signal mask, default dispositions for the common signals, and descriptors 0, 1 and
/// 2 only. Its output goes to files, not pipes: a daemon the child leaves behind cannot hold a pipe open, and no
/// thread has to drain one.
public final class ChildProcess: Sendable {
    /// What the child reads on stdin.
    public enum Input: Sendable {
        case null
        /// The text, then end of file.
        case text(String)
    }

    /// Where the child's stdout and stderr go.
    public enum Output: Sendable {
        /// Each to its own temporary file, read by `finish`.
        case capture
        /// Both appended to this file (a log a test reads while the child runs).
        case file(String)
        case null
    }

    public struct Result: Sendable {
        /// The exit code, or 128 + the signal that killed the child (as a shell reports it).
        public let status: Int32
        public let standardOutput: String
        public let standardError: String

        /// stdout's non-empty lines.
        public var lines: [String] { standardOutput.split(separator: "\n").map(String.init) }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public let pid: pid_t
    public let executable: String
    private let files: Files
    private let exitState: ExitState

    /// The environment of the test process with `changes` applied (a nil value removes a variable).
    public static func environment(_ changes: [String: String?] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in changes { environment[key] = value }
        return environment
    }

    /// Starts `executable arguments…` (an absolute path; no PATH search). `environment` is the child's whole
    /// environment (default: this process's); `directory` its working directory.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = ChildProcess.environment(),
        directory: String? = nil, input: Input = .null, output: Output = .capture
    ) throws {
        self.executable = executable
        let files = try Files(input: input, output: output)
        do {
            pid = try Self.spawn(executable, arguments, environment: environment, directory: directory, files: files)
        } catch {
            files.remove()
            throw error
        }
        self.files = files
        exitState = ExitState(pid: pid)
    }

    deinit {
        kill()
        files.remove()
    }

    /// Runs a program to completion (SIGKILLed after `timeout`) and returns what it printed.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = ChildProcess.environment(),
        directory: String? = nil, input: Input = .null, timeout: Duration = .seconds(60)
    ) async throws -> Result {
        try await ChildProcess(executable, arguments, environment: environment, directory: directory, input: input)
            .finish(timeout: timeout)
    }

    /// `run` for synchronous callers (it blocks the calling thread until the child exits; use it off the Swift
    /// concurrency pool or for short programs only).
    public static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String] = ChildProcess.environment(),
        directory: String? = nil, input: Input = .null
    ) throws -> Result {
        let child = try ChildProcess(executable, arguments, environment: environment, directory: directory, input: input)
        let status = child.exitState.waitBlocking()
        return child.result(status)
    }

    /// Whether the child has not exited yet.
    public var isRunning: Bool { exitState.status == nil }

    /// The exit status once the child has exited (see `Result.status`).
    public var status: Int32? { exitState.status }

    /// Sends `number` to the child, unless it has already been reaped (its pid may be someone else's by then).
    public func signal(_ number: Int32) { exitState.signal(number) }

    /// SIGKILL, and wait for the exit. Does nothing once the child has exited.
    public func kill() {
        exitState.signal(SIGKILL)
        _ = exitState.waitBlocking()
    }

    /// Waits for the child to exit, at most `timeout` (then throws, leaving it running), and returns its status.
    @discardableResult
    public func wait(timeout: Duration) async throws -> Int32 {
        guard let status = await exitState.wait(timeout: timeout) else {
            throw WaitTimeout(what: "\((executable as NSString).lastPathComponent) (pid \(pid)) to exit within \(timeout)")
        }
        return status
    }

    /// Waits for the child to exit, SIGKILLing it after `timeout`, and returns its status and output.
    public func finish(timeout: Duration = .seconds(60)) async throws -> Result {
        let watchdog = Task { [exitState] in
            try await Task.sleep(for: timeout)
            exitState.signal(SIGKILL)
        }
        defer { watchdog.cancel() }
        return result(await exitState.wait())
    }

    /// What the child wrote to stdout and stderr so far (both, for `.file`; empty for `.null`).
    public var standardOutput: String { files.read(files.standardOutput) }
    public var standardError: String { files.standardError.map(files.read) ?? "" }

    private func result(_ status: Int32) -> Result {
        Result(status: status, standardOutput: standardOutput, standardError: standardError)
    }

    // MARK: - Spawning

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    // glibc has both (2.34, 2.29), but its header hides them behind _GNU_SOURCE, so Swift's Glibc module does not
    // export them.
    private static let addCloseFrom: AddCloseFrom? =
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddCloseFrom.self) }
    private static let addChdir: AddChdir? =
        dlsym(nil, "posix_spawn_file_actions_addchdir_np").map { unsafeBitCast($0, to: AddChdir.self) }

    /// The signals a child starts with at their default action: whatever this process ignores or handles (the test
    /// runner, NIO, the crash driver ignoring SIGPIPE), a child starts as from a shell.
    static let defaultedSignals: [Int32] = [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGCHLD]

    private static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String], directory: String?, files: Files
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        func check(_ result: Int32, _ what: String) throws {
            guard result == 0 else { throw Failure("\(what): \(String(cString: strerror(result)))") }
        }
        try check(posix_spawn_file_actions_addopen(&actions, 0, files.standardInput, O_RDONLY, 0), "stdin")
        try check(
            posix_spawn_file_actions_addopen(&actions, 1, files.standardOutput, O_WRONLY | O_CREAT | O_APPEND, 0o644), "stdout")
        if let error = files.standardError {
            try check(posix_spawn_file_actions_addopen(&actions, 2, error, O_WRONLY | O_CREAT | O_APPEND, 0o644), "stderr")
        } else {
            try check(posix_spawn_file_actions_adddup2(&actions, 1, 2), "stderr")
        }
        // Nothing but 0, 1 and 2: descriptors other threads open without CLOEXEC while this one spawns included.
        guard let closeFrom = addCloseFrom else { throw Failure("posix_spawn_file_actions_addclosefrom_np is missing (glibc < 2.34)") }
        try check(closeFrom(&actions, 3), "posix_spawn_file_actions_addclosefrom_np")
        if let directory {
            guard let chdir = addChdir else { throw Failure("posix_spawn_file_actions_addchdir_np is missing (glibc < 2.29)") }
            try check(chdir(&actions, directory), "posix_spawn_file_actions_addchdir_np")
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in defaultedSignals { sigaddset(&defaults, signal) }
        try check(posix_spawnattr_setsigmask(&attributes, &empty), "posix_spawnattr_setsigmask")
        try check(posix_spawnattr_setsigdefault(&attributes, &defaults), "posix_spawnattr_setsigdefault")
        try check(posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)), "posix_spawnattr_setflags")

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        try check(posix_spawn(&pid, executable, &actions, &attributes, argv, envp), "cannot start \(executable)")
        return pid
    }
}

/// The child's stdin, stdout and stderr as files.
private struct Files: Sendable {
    let standardInput: String
    let standardOutput: String
    /// nil: stderr goes where stdout goes.
    let standardError: String?
    /// The ones this process made, removed with the child.
    let temporary: [String]

    init(input: ChildProcess.Input, output: ChildProcess.Output) throws {
        var temporary: [String] = []
        func make(_ suffix: String, _ contents: String = "") throws -> String {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("tether-child-\(UUID().uuidString).\(suffix)").path
            try contents.write(toFile: path, atomically: false, encoding: .utf8)
            temporary.append(path)
            return path
        }
        switch input {
        case .null: standardInput = "/dev/null"
        case .text(let text): standardInput = try make("in", text)
        }
        switch output {
        case .capture:
            standardOutput = try make("out")
            standardError = try make("err")
        case .file(let path):
            standardOutput = path
            standardError = nil
        case .null:
            standardOutput = "/dev/null"
            standardError = nil
        }
        self.temporary = temporary
    }

    func read(_ path: String) -> String {
        path == "/dev/null" ? "" : (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    func remove() {
        for path in temporary { unlink(path) }
    }
}

/// The child's exit, observed by a plain thread blocked in waitid (never a Swift concurrency thread: this machine
/// has two), for any number of waiters.
private final class ExitState: Sendable {
    private struct State {
        var status: Int32?
        var waiters: [@Sendable (Int32) -> Void] = []
    }

    private let pid: pid_t
    private let state = Mutex(State())

    init(pid: pid_t) {
        self.pid = pid
        Thread { [self] in
            // WNOWAIT leaves the child a zombie, so its pid cannot be reused until it is reaped below, under the
            // lock that `signal` takes: a signal never reaches another process that got the same pid.
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 {
                guard errno == EINTR else { break }
            }
            let (status, waiters) = state.withLock { state -> (Int32, [@Sendable (Int32) -> Void]) in
                var raw: Int32 = 0
                while waitpid(pid, &raw, 0) < 0, errno == EINTR {}
                let status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
                state.status = status
                defer { state.waiters.removeAll() }
                return (status, state.waiters)
            }
            for waiter in waiters { waiter(status) }
        }.start()
    }

    var status: Int32? { state.withLock { $0.status } }

    func signal(_ number: Int32) {
        state.withLock { state in
            if state.status == nil { _ = Glibc.kill(pid, number) }
        }
    }

    private func whenExited(_ waiter: @escaping @Sendable (Int32) -> Void) {
        let ready = state.withLock { state -> Int32? in
            if let status = state.status { return status }
            state.waiters.append(waiter)
            return nil
        }
        if let ready { waiter(ready) }
    }

    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in whenExited { continuation.resume(returning: $0) } }
    }

    /// The status, or nil once `timeout` has passed. (Not `within`: it would wait for this uncancellable wait.)
    func wait(timeout: Duration) async -> Int32? {
        await withCheckedContinuation { continuation in
            let once = ResumeOnce(continuation)
            let timer = Task { if (try? await Task.sleep(for: timeout)) != nil { once.resume(nil) } }
            whenExited { status in
                timer.cancel()
                once.resume(status)
            }
        }
    }

    func waitBlocking() -> Int32 {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Int32>(0)
        whenExited { status in
            result.withLock { $0 = status }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }
}

private final class ResumeOnce: Sendable {
    private let continuation: Mutex<CheckedContinuation<Int32?, Never>?>

    init(_ continuation: CheckedContinuation<Int32?, Never>) { self.continuation = Mutex(continuation) }

    func resume(_ status: Int32?) {
        continuation.withLock { $0.take() }?.resume(returning: status)
    }
}
