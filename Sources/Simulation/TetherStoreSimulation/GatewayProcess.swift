import Foundation

/// A `CrashGateway` child: spawned with Foundation's `Process`, fed on stdin, read on stdout with `poll`, and
/// killed with SIGKILL (no chance to flush, close or roll back anything).
final class GatewayProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var lines = LineBuffer()
    private var exited = false

    /// `arguments` default to the consumption gateway's (`gateway --db PATH`).
    init(executable: String, databasePath: String, logPath: String, arguments: [String]? = nil) throws {
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try log.seekToEnd()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments ?? ["gateway", "--db", databasePath]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = log
        try process.run()
        try log.close()
    }

    /// Lines written since the last call, waiting up to `timeoutMilliseconds` for the first; `nil` once the child
    /// has exited (its stdout reached end of file).
    func readLines(timeoutMilliseconds: Int32) -> [String]? {
        guard !exited else { return nil }
        let descriptor = output.fileHandleForReading.fileDescriptor
        var collected: [String] = []
        var timeout = timeoutMilliseconds
        while true {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, timeout)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return collected }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                exited = true
                return collected.isEmpty ? nil : collected
            }
            collected += lines.append(chunk[0..<count])
            timeout = 0  // take whatever else is already there, without waiting
        }
    }

    func send(_ text: String) {
        guard !exited else { return }
        let descriptor = input.fileHandleForWriting.fileDescriptor
        Array(text.utf8).withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, base + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }  // EPIPE: the child is gone; the driver finds out on read
                offset += written
            }
        }
    }

    /// SIGKILL, then reap.
    func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        awaitExit()
        close()
    }

    /// Until Foundation has seen the child exit, at most 10 s. Not `waitUntilExit()`, which spins the calling
    /// thread's run loop until `isRunning` turns false and once never returned in a loaded test run (see
    /// `DBusPrivateBus.awaitExit`). A SIGKILLed child is dead either way.
    private func awaitExit() {
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning, ContinuousClock.now < deadline { usleep(5_000) }
    }

    /// Closes stdin so the child ends its loop, and reaps it (SIGKILL after two seconds).
    func stop() {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(2)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        awaitExit()
        close()
    }

    private func close() {
        exited = true
        try? input.fileHandleForWriting.close()
        try? output.fileHandleForReading.close()
    }
}
