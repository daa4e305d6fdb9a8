import Foundation
import Synchronization
import Testing
import TetherTestSupport
@testable import TetherDaemon
#if canImport(Glibc)
import Glibc
#endif

/// A datagram socket standing in for systemd's notify socket: bound at a path or an abstract name.
final class NotifySocket: @unchecked Sendable {
    let descriptor: Int32
    /// What NOTIFY_SOCKET should say: the path, or `@name` for an abstract socket.
    let name: String

    init(abstract: Bool, directory: TemporaryDirectory) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw DaemonTestError("socket failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes: [UInt8]
        if abstract {
            let unique = "tetherd-test-\(getpid())-\(UUID().uuidString.prefix(8))"
            name = "@" + unique
            bytes = [0] + Array(unique.utf8)
        } else {
            name = directory.file("notify")
            bytes = Array(name.utf8) + [0]
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else { throw DaemonTestError("bind \(name): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next datagram, or nil after a 1 s receive timeout.
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Datagrams until one contains `assignment` (bounded). The receives block, so they run on a thread of their own
    /// (`onOwnThread`): on Swift's two-thread pool a test blocked here for seconds froze other tests' waits.
    func waitFor(_ assignment: String, timeout: Duration = .seconds(60)) async throws -> [String] {
        try await onOwnThread("notify-socket") { try self.blockingWaitFor(assignment, timeout: timeout) }
    }

    /// Up to `count` datagrams, each waited for up to 1 s, off the pool as `waitFor`.
    func drain(_ count: Int) async throws {
        try await onOwnThread("notify-socket") { for _ in 0..<count { _ = self.receive() } }
    }

    /// Reads every datagram as it comes, on a thread of its own, until `stop`. For a daemon that pings every 50 ms:
    /// a reader that pauses between waits lets the ten-datagram queue fill, and the daemon then rightly drops what
    /// it sends next (a CI run lost STOPPING=1 so, in the half second between seeing a ping and SIGTERM).
    final class Recording: Sendable {
        private let messages = Mutex<[String]>([])
        private let stopped = Atomic<Bool>(false)

        fileprivate init(_ socket: NotifySocket) {
            let thread = Thread { [self] in
                while !stopped.load(ordering: .relaxed) {
                    if let message = socket.receive() { messages.withLock { $0.append(message) } }
                }
            }
            thread.name = "notify-socket-recording"
            thread.start()
        }

        /// Whether a datagram read so far carries `assignment`.
        func saw(_ assignment: String) -> Bool {
            messages.withLock { $0.contains { $0.split(separator: "\n").contains(Substring(assignment)) } }
        }

        var all: [String] { messages.withLock { $0 } }

        /// Ends the reading within a second (the receive timeout).
        func stop() { stopped.store(true, ordering: .relaxed) }
    }

    /// Starts reading continuously; the recording holds the socket until it is stopped.
    func record() -> Recording { Recording(self) }

    private func blockingWaitFor(_ assignment: String, timeout: Duration) throws -> [String] {
        var seen: [String] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let message = receive() {
                seen.append(message)
                if message.split(separator: "\n").contains(Substring(assignment)) { return seen }
            }
        }
        throw DaemonTestError("no \(assignment) on the notify socket; saw \(seen)")
    }

    deinit { close(descriptor) }
}

struct SystemdNotifierTests {
    @Test(arguments: [false, true]) func messagesArriveOnARealSocket(abstract: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let socket = try NotifySocket(abstract: abstract, directory: directory)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.name])
        try notifier.ready(status: "running")
        #expect(socket.receive() == "READY=1\nSTATUS=running")
        try notifier.status("two\nlines")
        #expect(socket.receive() == "STATUS=two lines")
        try notifier.watchdog()
        #expect(socket.receive() == "WATCHDOG=1")
        try notifier.stopping()
        #expect(socket.receive() == "STOPPING=1")
    }

    /// A receiver that does not read: its queue fills (net.unix.max_dgram_qlen) and further sends fail at once
    /// with `queueFull` instead of blocking the caller's thread until somebody reads.
    @Test func aFullSocketDropsInsteadOfBlocking() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let socket = try NotifySocket(abstract: true, directory: directory)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.name])
        let outcome = Mutex<(sent: Int, dropped: Int)?>(nil)
        let done = DispatchSemaphore(value: 0)
        // On a thread of its own: a blocking send would hang it, and the bounded wait below reports that.
        Thread.detachNewThread {
            var sent = 0
            var dropped = 0
            for _ in 0..<1_000 {
                do {
                    try notifier.watchdog()
                    sent += 1
                } catch let error as NotifyError {
                    if error.queueFull { dropped += 1 }
                } catch {}
            }
            outcome.withLock { $0 = (sent, dropped) }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 30) == .success, "sending to a full notify socket blocked")
        let counts = try #require(outcome.withLock { $0 })
        #expect(counts.sent > 0 && counts.sent < 1_000)
        #expect(counts.sent + counts.dropped == 1_000)
        #expect(socket.receive() == "WATCHDOG=1")
    }

    @Test func withoutNotifySocketNothingIsSent() throws {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        try notifier.ready()
    }

    @Test func aSocketThatIsNotThereIsAnError() {
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/notify"])
        #expect(throws: NotifyError.self) { try notifier.ready() }
    }

    @Test func watchdogIntervalFollowsTheEnvironment() {
        let half = SystemdNotifier(environment: ["NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "4000000"], processIdentifier: 42)
        #expect(half.watchdogPingInterval == .seconds(2))
        let forUs = SystemdNotifier(environment: ["WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "42"], processIdentifier: 42)
        #expect(forUs.watchdogInterval == .seconds(4))
        let forAnother = SystemdNotifier(environment: ["WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "43"], processIdentifier: 42)
        #expect(forAnother.watchdogInterval == nil)
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "0"]).watchdogInterval == nil)
    }
}
