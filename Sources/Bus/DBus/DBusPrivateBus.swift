import Foundation
import Glibc
import Synchronization

/// A private `dbus-daemon` for tests, demos and the BlueZ simulator.
///
/// The daemon runs as a *system*-type bus on a Unix socket in a fresh temporary directory, with EXTERNAL auth
/// and a policy that allows everything (owning any name, sending anywhere, eavesdropping). That policy is what
/// bleak needs to accept the bus as a system bus: a stricter one left its scanner waiting forever. Point a client
/// at it with `DBUS_SYSTEM_BUS_ADDRESS=<address>` (see `systemBusEnvironment`).
///
/// `stop()` (or the last reference going away) terminates the daemon and removes the directory.
public final class DBusPrivateBus: Sendable {
    /// The address printed by the daemon, with its guid: `unix:path=/tmp/tether-dbus-XXXXXX/bus,guid=...`.
    public let address: String
    /// The listening socket.
    public let socketPath: String
    /// The temporary directory holding the socket, the config file and the daemon's log.
    public let directory: String
    public let processIdentifier: Int32

    private let daemon: Mutex<Process?>

    private init(address: String, socketPath: String, directory: String, daemon: Process) {
        self.address = address
        self.socketPath = socketPath
        self.directory = directory
        processIdentifier = daemon.processIdentifier
        self.daemon = Mutex(daemon)
    }

    deinit {
        stop()
    }

    /// The environment that points D-Bus clients (bleak, busctl, gdbus --system) at this bus.
    public var systemBusEnvironment: [String: String] {
        ["DBUS_SYSTEM_BUS_ADDRESS": address]
    }

    /// The daemon's stderr, for diagnosing a failed test.
    public var log: String {
        (try? String(contentsOfFile: directory + "/daemon.log", encoding: .utf8)) ?? ""
    }

    /// Starts a daemon and waits (at most `startupTimeout`) for it to print its address.
    public static func start(
        daemonExecutable: String? = nil,
        startupTimeout: Duration = .seconds(10)
    ) async throws -> DBusPrivateBus {
        let executable = try daemonExecutable ?? locateDaemon()
        let directory = try makeTemporaryDirectory()
        let socketPath = directory + "/bus"
        let configPath = directory + "/bus.conf"
        let logPath = directory + "/daemon.log"
        do {
            try configuration(socketPath: socketPath).write(toFile: configPath, atomically: true, encoding: .utf8)
            guard FileManager.default.createFile(atPath: logPath, contents: nil),
                let log = FileHandle(forWritingAtPath: logPath)
            else {
                throw DBusError(.failed, "Cannot create \(logPath)")
            }
            defer { try? log.close() }

            let output = Pipe()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["--config-file=\(configPath)", "--nofork", "--print-address"]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            process.standardError = log
            try process.run()

            let reader = AddressReader(descriptor: output.fileHandleForReading.fileDescriptor)
            let timer = Task {
                guard (try? await Task.sleep(for: startupTimeout)) != nil else { return }
                reader.fail(DBusError(.timeout, "dbus-daemon printed no address within \(startupTimeout)"))
            }
            defer { timer.cancel() }
            let address: String
            do {
                address = try await reader.address()
            } catch {
                _ = kill(process.processIdentifier, SIGKILL)
                Self.awaitExit(of: process)
                let daemonLog = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                throw DBusError(.failed, "dbus-daemon did not start: \(error) \(daemonLog)")
            }
            return DBusPrivateBus(address: address, socketPath: socketPath, directory: directory, daemon: process)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// Whether the daemon is still running.
    public var isRunning: Bool {
        daemon.withLock { $0?.isRunning ?? false }
    }

    /// Kills the daemon, waits for it to exit and removes the temporary directory. Connections to the bus see
    /// it disappear. Calling it again does nothing.
    ///
    /// SIGKILL rather than SIGTERM: Foundation's `Process` starts the child with the signal mask of the thread
    /// that launched it, and Swift's concurrency threads block SIGTERM, so the daemon would never see it. The
    /// daemon keeps no state worth a graceful exit; its socket goes with the directory.
    ///
    /// It does not wait for Foundation to see the daemon exit: that wait (up to 5 s on a loaded machine) runs on a
    /// thread of its own, which keeps the `Process` until then. `stop` is called from tests' async code, and on
    /// Swift's two-thread pool (two cores) a few such waits at once held up every other test in the process.
    public func stop() {
        let stopped = daemon.withLock { daemon -> Process? in
            defer { daemon = nil }
            return daemon
        }
        guard let process = stopped else { return }
        if process.isRunning { _ = kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
        let reaping = UncheckedProcess(process)
        let thread = Thread { Self.awaitExit(of: reaping.process) }
        thread.name = "dbus-private-bus-reaper"
        thread.start()
    }

    /// A `Process` handed to the reaping thread, which alone touches it from then on.
    private struct UncheckedProcess: @unchecked Sendable {
        let process: Process
        init(_ process: Process) { self.process = process }
    }

    /// Waits (at most 5 s) until Foundation has seen the SIGKILLed daemon exit. Not `waitUntilExit()`: on Linux it
    /// spins the calling thread's run loop until `isRunning` turns false, and in a loaded test run it once never
    /// did, holding a thread of Swift's concurrency pool for good and with it the whole run (gdb: the thread in
    /// `waitUntilExit` → `_CFRunLoopFinished`, 7 minutes). The daemon is dead either way; what is left is a zombie
    /// Foundation reaps when it notices.
    static func awaitExit(of process: Process) {
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
    }

    // MARK: Setup

    /// The busconfig described above; the listen path is XML-escaped.
    static func configuration(socketPath: String) -> String {
        let escapedPath = socketPath
            .replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        return """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(escapedPath)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
              </policy>
            </busconfig>

            """
    }

    private static func locateDaemon() throws -> String {
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = searchPath.split(separator: ":").map { "\($0)/dbus-daemon" } + ["/usr/bin/dbus-daemon"]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw DBusError(.fileNotFound, "dbus-daemon is not installed (Debian package: dbus-daemon)")
        }
        return found
    }

    /// A short path under /tmp: Unix socket paths are limited to 107 bytes.
    private static func makeTemporaryDirectory() throws -> String {
        var template = Array("/tmp/tether-dbus-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return mkdtemp(base) != nil
        }
        guard created else {
            throw DBusError(.failed, "Cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Reads the daemon's first stdout line on a plain thread (a blocking read must not occupy a Swift
/// concurrency thread) and hands it to one waiting task; a timeout may fail the wait first.
private final class AddressReader: Sendable {
    private enum State {
        case waiting(CheckedContinuation<String, any Error>?)
        case finished(Result<String, any Error>)
    }

    private let state = Mutex<State>(.waiting(nil))

    init(descriptor: Int32) {
        NamedThread.start("dbusd address") { [self] in
            self.finish(Self.readFirstLine(from: descriptor))
        }
    }

    func address() async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<String, any Error>? in
                switch state {
                case .finished(let result):
                    return result
                case .waiting:
                    state = .waiting(continuation)
                    return nil
                }
            }
            if let ready {
                continuation.resume(with: ready)
            }
        }
    }

    func fail(_ error: any Error) {
        finish(.failure(error))
    }

    private func finish(_ result: Result<String, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<String, any Error>? in
            guard case .waiting(let continuation) = state else { return nil }
            state = .finished(result)
            return continuation
        }
        waiter?.resume(with: result)
    }

    private static func readFirstLine(from descriptor: Int32) -> Result<String, any Error> {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else {
                return .failure(DBusError(.failed, "dbus-daemon exited before printing its address"))
            }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
            guard line.count < 4096 else {
                return .failure(DBusError(.failed, "dbus-daemon printed an address line over 4 KiB"))
            }
        }
        let address = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        guard !address.isEmpty else {
            return .failure(DBusError(.failed, "dbus-daemon printed an empty address"))
        }
        return .success(address)
    }
}
