import Logging
import Synchronization
import Testing
@testable import TetherDaemon

/// Log lines as journald takes them: one line per record, the syslog priority as a `<N>` prefix under journald,
/// the level's name otherwise, metadata sorted after the message, records below the level dropped.
struct DaemonLogHandlerTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    func logger(journald: Bool, level: Logger.Level = .info) -> (Logger, Lines) {
        let lines = Lines()
        let logger = Logger(label: "tetherd.test") { label in
            DaemonLogHandler(label: label, level: level, journald: journald) { lines.append($0) }
        }
        return (logger, lines)
    }

    @Test func journaldLinesCarryThePriority() {
        let (logger, lines) = logger(journald: true)
        logger.error("storage refuses new data", metadata: ["reason": "disk full", "after": "3"])
        logger.info("two\nlines")
        logger.debug("dropped below the level")
        #expect(lines.all == [
            "<3>tetherd.test: storage refuses new data after=3 reason=disk full\n",
            "<6>tetherd.test: two ⏎ lines\n",
        ])
    }

    @Test func outsideJournaldLinesNameTheLevel() {
        let (logger, lines) = logger(journald: false, level: .debug)
        logger.warning("backing off")
        logger.debug("detail")
        #expect(lines.all == ["WARNING tetherd.test: backing off\n", "DEBUG tetherd.test: detail\n"])
    }
}
