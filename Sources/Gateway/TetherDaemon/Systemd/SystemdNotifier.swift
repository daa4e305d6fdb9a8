import Foundation
import Glibc

/// systemd's notify protocol, spoken directly (sd_notify(3)): one datagram per state change, `KEY=value` lines,
/// sent to the AF_UNIX socket named by `$NOTIFY_SOCKET`. A name starting with `@` is in the abstract namespace
/// (the `@` becomes a NUL byte). Without `$NOTIFY_SOCKET` (not started by systemd with Type=notify) every send is
/// a no-op, as sd_notify does.
public struct SystemdNotifier: Sendable {
    public let socketName: String?
    /// How often systemd expects WATCHDOG=1 (`$WATCHDOG_USEC`), when it applies to this process.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment, processIdentifier: Int32 = getpid()) {
        let socket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketName = socket
        // sd_watchdog_enabled(3): WATCHDOG_PID, when set, names the process the watchdog is meant for.
        if let pidText = environment["WATCHDOG_PID"], Int32(pidText) != processIdentifier {
            watchdogInterval = nil
        } else if let usecText = environment["WATCHDOG_USEC"], let usec = Int64(usecText), usec > 0 {
            watchdogInterval = .microseconds(usec)
        } else {
            watchdogInterval = nil
        }
    }

    public var isEnabled: Bool { socketName != nil }

    /// sd_watchdog_enabled(3): "send WATCHDOG=1 ... at half the interval".
    public var watchdogPingInterval: Duration? { watchdogInterval.map { $0 / 2 } }

    public func ready(status: String? = nil) throws(NotifyError) {
        try send(["READY=1"] + (status.map { ["STATUS=\($0)"] } ?? []))
    }

    public func status(_ text: String) throws(NotifyError) { try send(["STATUS=\(text)"]) }
    public func stopping(status: String? = nil) throws(NotifyError) {
        try send(["STOPPING=1"] + (status.map { ["STATUS=\($0)"] } ?? []))
    }
    public func watchdog() throws(NotifyError) { try send(["WATCHDOG=1"]) }

    /// Sends the assignments in one datagram. Newlines inside a value would start a new assignment, so they
    /// are replaced by spaces.
    public func send(_ assignments: [String]) throws(NotifyError) {
        guard let socketName else { return }
        let message = assignments.map { $0.replacingOccurrences(of: "\n", with: " ") }.joined(separator: "\n")

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketName.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity, pathBytes.count > 1 || !abstract else {
            throw NotifyError(message: "NOTIFY_SOCKET \(socketName) is not a usable socket name")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        // An abstract name's length is exact (no terminating NUL); a path is NUL-terminated.
        let length = MemoryLayout<sa_family_t>.size + pathBytes.count + (abstract ? 0 : 1)

        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw NotifyError(message: "socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        // Never block: a datagram to a receiver whose queue is full (net.unix.max_dgram_qlen, 10 by default)
        // blocks the sender until it is read. The callers run on the cooperative pool, and a receiver that does
        // not read would park every pool thread that notifies, wedging the daemon (the control API stopped
        // answering in CI while a test had not yet read its notify socket). A full queue drops this message.
        let sent = message.utf8CString.withUnsafeBufferPointer { bytes in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(
                        descriptor, bytes.baseAddress, bytes.count - 1, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT),
                        socketAddress, socklen_t(length))
                }
            }
        }
        guard sent >= 0 else {
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK {
                throw NotifyError(
                    message: "NOTIFY_SOCKET \(socketName) is full (nobody is reading it); dropped \(message.debugDescription)",
                    queueFull: true)
            }
            throw NotifyError(message: "sending to NOTIFY_SOCKET \(socketName): \(String(cString: strerror(code)))")
        }
    }
}

public struct NotifyError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    /// The receiver's queue was full: the message was dropped, and sending it again later can succeed.
    public var queueFull: Bool
    public var description: String { message }

    public init(message: String, queueFull: Bool = false) {
        self.message = message
        self.queueFull = queueFull
    }
}
