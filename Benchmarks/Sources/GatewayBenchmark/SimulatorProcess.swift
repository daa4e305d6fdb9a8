import Foundation
import Glibc

/// tether-sim as a child process on its own private bus, so the benchmark's CPU figures are the receiver's alone.
final class SimulatorProcess {
    let process: Process
    let address: String

    init(executable: String, devices: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--start-private-bus", "--devices", String(devices), "--seed", "1", "--unthrottled"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        // It prints DBUS_SYSTEM_BUS_ADDRESS=... once org.bluez is owned.
        var line = ""
        let handle = output.fileHandleForReading
        while !line.contains("\n") {
            let data = handle.availableData
            guard !data.isEmpty else { break }
            line += String(decoding: data, as: UTF8.self)
        }
        guard let found = line.split(separator: "\n").first(where: { $0.hasPrefix("DBUS_SYSTEM_BUS_ADDRESS=") })
        else {
            process.terminate()
            throw BenchmarkError("tether-sim printed no bus address (got '\(line)')")
        }
        address = String(found.dropFirst("DBUS_SYSTEM_BUS_ADDRESS=".count))
    }

    /// SIGTERM lets tether-sim stop its dbus-daemon (it unblocks the signal a Foundation parent handed down).
    func stop() {
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// This process's CPU time (user + system), from getrusage.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}
