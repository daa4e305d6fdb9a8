import Foundation
import Glibc
import Synchronization

/// Runs the built `tether` executable as a user would, and collects its exit status and output.
///
/// Pipes are drained and stdin is fed on plain threads: a blocking read must never occupy one of the few Swift
/// concurrency threads (this machine has two) while the in-test daemon's handlers need them.
enum TetherProcess {
    struct Result: Sendable {
        let status: Int32
        let standardOutput: String
        let standardError: String

        var lines: [String] { standardOutput.split(separator: "\n").map(String.init) }
    }

    /// `tether`, built next to this test bundle (or named by TETHER_CLI_BINARY).
    static var executable: String? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["TETHER_CLI_BINARY"] { return path }
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [products, products.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("tether").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    static func run(
        _ arguments: [String], bus: String? = nil, input: String? = nil, environment: [String: String] = [:],
        timeout: Duration = .seconds(60), executable: String? = nil
    ) async throws -> Result {
        guard let executable = executable ?? Self.executable else { throw NotBuilt() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var childEnvironment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        childEnvironment["TETHER_BUS_ADDRESS"] = nil
        if let bus { childEnvironment["TETHER_BUS_ADDRESS"] = bus }
        // Point the default at nothing so a test never reaches a real system bus by accident.
        childEnvironment["DBUS_SYSTEM_BUS_ADDRESS"] = environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/nonexistent/tether-test-bus"
        process.environment = childEnvironment
        let output = Pipe()
        let error = Pipe()
        let stdin = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        let exited = ExitWaiter()
        process.terminationHandler = { exited.finish($0.terminationStatus) }
        try process.run()
        if let input {
            let writer = stdin.fileHandleForWriting
            Thread {
                writer.write(Data(input.utf8))
                try? writer.close()
            }.start()
        }
        let outputText = Drain(output.fileHandleForReading)
        let errorText = Drain(error.fileHandleForReading)
        let pid = process.processIdentifier
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGKILL)
        }
        let status = await exited.wait()
        watchdog.cancel()
        return Result(status: status, standardOutput: await outputText.text(), standardError: await errorText.text())
    }

    struct NotBuilt: Error, CustomStringConvertible {
        var description: String { "tether was not built next to the tests (swift build --build-tests builds it)" }
    }
}

private final class Drain: Sendable {
    private let state = Mutex<(data: Data?, waiters: [CheckedContinuation<Data, Never>])>((nil, []))

    init(_ handle: FileHandle) {
        Thread { [self] in
            let data = handle.readDataToEndOfFile()
            let waiters = state.withLock { state in
                state.data = data
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: data) }
        }.start()
    }

    func text() async -> String {
        let data = await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Data? in
                if let data = state.data { return data }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        return String(decoding: data, as: UTF8.self)
    }
}

private final class ExitWaiter: Sendable {
    private let state = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    func finish(_ status: Int32) {
        let waiters = state.withLock { state in
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
