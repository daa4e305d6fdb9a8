import Foundation

/// Standard output, flushed line by line so `--json` lines reach a pipe as they happen.
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
}
