import DBus
import Foundation
import Glibc
import Synchronization

/// One end of an AF_UNIX SOCK_SEQPACKET socketpair as BlueZ hands out for AcquireNotify / AcquireWrite: the
/// client gets the other end; one packet is one ATT value.
///
/// A plain thread (never a Swift concurrency thread) waits on the socket: for AcquireWrite it reads packets, for
/// AcquireNotify it only waits for the client to close its end. Both end in `.closed` on `events`, which a single
/// consumer reads in order.
final class SeqPacketSocket: Sendable {
    enum Event: Sendable {
        case packet([UInt8])
        case closed
    }

    let id: UInt64
    let events: AsyncStream<Event>
    private let descriptor: OwnedFileDescriptor

    /// Makes the pair; returns the socket kept here and the client's end.
    static func makePair(id: UInt64) throws -> (SeqPacketSocket, OwnedFileDescriptor) {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else {
            throw BlueZError.failed("socketpair: \(String(cString: strerror(errno)))")
        }
        // Real BlueZ (src/gatt-client.c, create_sock) makes the pair with SOCK_NONBLOCK, so the descriptor a
        // client receives is non-blocking: a client that reads it with a plain blocking recv sees EAGAIN at once
        // and, if it takes that for the end, loses the subscription (seen in the real-BlueZ VM). The simulator's
        // own end stays blocking for its reader thread; the client's end is made non-blocking like BlueZ's.
        let flags = fcntl(fds[1], F_GETFL)
        guard flags >= 0, fcntl(fds[1], F_SETFL, flags | O_NONBLOCK) == 0 else {
            close(fds[0])
            close(fds[1])
            throw BlueZError.failed("fcntl(O_NONBLOCK): \(String(cString: strerror(errno)))")
        }
        return (SeqPacketSocket(id: id, fd: fds[0]), OwnedFileDescriptor(taking: fds[1]))
    }

    private init(id: UInt64, fd: Int32) {
        self.id = id
        descriptor = OwnedFileDescriptor(taking: fd)
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        events = stream
        let owned = descriptor
        NamedThread.start("sim notify fd") {
            Self.readLoop(fd: fd, continuation: continuation)
            owned.close()
        }
    }

    /// Sends one packet; false if the client has gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        let sent = descriptor.withDescriptor { fd in
            bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        }
        return (sent ?? -1) == bytes.count
    }

    /// Waits up to 50 ms for room in the socket; false if the peer is gone or it stays full (a client that
    /// stopped reading).
    func isWritableSoon() -> Bool {
        descriptor.withDescriptor { fd in
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            return poll(&poller, 1, 50) == 1 && poller.revents & Int16(POLLOUT) != 0
        } ?? false
    }

    /// Ends the socket from this side (the link dropped): the client reads EOF and the thread finishes.
    func shutDown() {
        descriptor.withDescriptor { fd in _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private static func readLoop(fd: Int32, continuation: AsyncStream<Event>.Continuation) {
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            continuation.yield(.packet(Array(buffer[0..<count])))
        }
        continuation.yield(.closed)
        continuation.finish()
    }
}
