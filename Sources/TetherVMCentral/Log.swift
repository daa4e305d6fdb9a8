import Foundation

/// Timestamped lines on standard output. ERROR: the run cannot reach its goal (data at risk, gave up); WARN: the
/// protocol recovered from something by design (the scenario lists these). The checks look for " ERROR ".
enum Log {
    static func info(_ message: String) { emit("INFO ", message) }
    static func warning(_ message: String) { emit("WARN ", message) }
    static func error(_ message: String) { emit("ERROR", message) }

    private static func emit(_ level: String, _ message: String) {
        let seconds = Date().timeIntervalSince1970
        // One write(2) per line: unbuffered, and lines from concurrent tasks never interleave.
        let line = String(format: "%.3f", seconds) + " \(level) central: \(message)\n"
        FileHandle.standardOutput.write(Data(line.utf8))
    }
}
