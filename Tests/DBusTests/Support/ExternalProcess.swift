import Foundation
import Glibc
import Synchronization

/// Runs a program that is not Tether (gdbus, dbus-send, python3 with dbus-python) as a D-Bus peer.
///
/// Output pipes are drained on plain threads: a blocking read must never occupy one of the few Swift
/// concurrency threads (this machine has two), or the Tether handlers the peer is waiting for could not run.
final class ExternalProcess: Sendable {
    struct Output: Sendable {
        let status: Int32
        let standardOutput: String
        let standardError: String

        var lines: [String] {
            standardOutput.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        }
    }

    private let process: Mutex<Process>
    private let output: PipeDrain
    private let error: PipeDrain
    private let exit: ExitSignal

    /// Starts `executable`; its environment is this process's plus `environment`. `temporaryFiles` are
    /// deleted when the program exits (e.g. the script it runs).
    init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        temporaryFiles: [String] = []
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let outputPipe = Pipe()
        let errorPipe = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        let exit = ExitSignal()
        process.terminationHandler = { finished in
            for file in temporaryFiles {
                try? FileManager.default.removeItem(atPath: file)
            }
            exit.finish(finished.terminationStatus)
        }
        do {
            try process.run()
        } catch {
            for file in temporaryFiles {
                try? FileManager.default.removeItem(atPath: file)
            }
            throw error
        }
        output = PipeDrain(outputPipe.fileHandleForReading)
        error = PipeDrain(errorPipe.fileHandleForReading)
        self.exit = exit
        self.process = Mutex(process)
    }

    /// Runs a program to completion, killing it after `timeout`.
    static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> Output {
        try await ExternalProcess(executable, arguments, environment: environment).finish(timeout: timeout)
    }

    /// Waits for the program to exit (terminating it after `timeout`) and returns everything it printed.
    func finish(timeout: Duration = .seconds(30)) async throws -> Output {
        let watchdog = Task { [self] in
            try await Task.sleep(for: timeout)
            terminate()
        }
        defer { watchdog.cancel() }
        let status = await exit.wait()
        return Output(
            status: status,
            standardOutput: await output.contents(),
            standardError: await error.contents())
    }

    /// SIGKILL: a child started from a Swift concurrency thread inherits a mask that blocks SIGTERM.
    func terminate() {
        process.withLock { process in
            if process.isRunning { _ = kill(process.processIdentifier, SIGKILL) }
        }
    }
}

/// Reads a pipe to EOF on its own thread.
private final class PipeDrain: Sendable {
    private let result = Mutex<(data: Data?, waiters: [CheckedContinuation<Data, Never>])>((nil, []))

    init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            let data = handle.readDataToEndOfFile()
            let waiters = result.withLock { state -> [CheckedContinuation<Data, Never>] in
                state.data = data
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: data) }
        }
        thread.start()
    }

    func contents() async -> String {
        let data = await withCheckedContinuation { continuation in
            let ready = result.withLock { state -> Data? in
                if let data = state.data { return data }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The exit status of a process, for any number of waiters.
private final class ExitSignal: Sendable {
    private let state = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    func finish(_ status: Int32) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int32, Never>] in
            state.status = status
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Int32? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
