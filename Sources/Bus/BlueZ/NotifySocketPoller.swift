import DBus
import Glibc
import Synchronization

/// One thread that reads every AcquireNotify socket of the process through poll(2), instead of a thread per
/// socket blocked in recv.
///
/// Why: a gateway holds one notify socket per connected device, and every link cycle ended one reader thread and
/// started another. Each thread costs a stack, and glibc hands threads malloc arenas (up to 8 per core) whose freed
/// memory it keeps: the two-hour, 20-device soak grew its anonymous memory from 11 to 24 MB while the live heap
/// stayed near 7 MB (docs/measurements/durability.md). One long-lived reader keeps the thread count flat whatever
/// the number of devices or cycles.
///
/// poll(2) rather than epoll(7): Swift's Glibc module does not import sys/epoll.h, and the set is small (a socket per
/// connected device, `bluetooth.max_connections` ≤ 32). A self-pipe wakes the thread when a socket joins. A socket
/// with more queued than one batch (`NotifyAcquisition.maximumBatch`) is still readable at the next poll, so one busy
/// device cannot starve the others. A socket leaves the set (and is closed) when
/// its peer closes (link lost), after `shutdown` (the acquisition closed), or on an error; its stream finishes then.
final class NotifySocketPoller: Sendable {
    static let shared = NotifySocketPoller()

    private struct Registration {
        let descriptor: OwnedFileDescriptor
        let fd: Int32
        let capacity: Int
        let continuation: NotificationBatches.Continuation
    }

    private struct State {
        var registrations: [UInt64: Registration] = [:]
        var nextKey: UInt64 = 1
        var started = false
    }

    /// The self-pipe: `watch` writes a byte to `wakeWrite` so that the thread polls the new socket too.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let state = Mutex(State())
    /// Reader threads started (1 once a socket was watched): what the tests check, since a thread's kernel name
    /// cannot tell: threads the Swift runtime spawns from this one inherit its name (clone(2) copies `comm`).
    let readerThreadsStarted = Atomic<Int>(0)

    private init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for fd in ends {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        }
        (wakeRead, wakeWrite) = (ends[0], ends[1])
    }

    /// Reads `descriptor` (a SOCK_SEQPACKET socket, one notification per packet) into `continuation` until it
    /// ends, then finishes the stream and closes the descriptor. `false` when it cannot be watched (no pipe): the
    /// caller then finishes the stream itself.
    func watch(_ descriptor: OwnedFileDescriptor, capacity: Int, continuation: NotificationBatches.Continuation) -> Bool {
        guard wakeRead >= 0, let fd = descriptor.rawValue else { return false }
        // Non-blocking, so that a read can never hold the one thread (BlueZ sends it so already; src/gatt-client.c).
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 && flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        let startThread = state.withLock { state -> Bool in
            state.registrations[state.nextKey] = Registration(descriptor: descriptor, fd: fd, capacity: capacity, continuation: continuation)
            state.nextKey += 1
            defer { state.started = true }
            return !state.started
        }
        if startThread {
            NamedThread.start("BlueZ notify") { [self] in run() }
        } else {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)  // EAGAIN: the pipe is full of wake-ups already, which is as good
        }
        return true
    }

    /// The thread: polls the wake pipe and every socket, then reads each ready socket's queued packets.
    private func run() -> Never {
        readerThreadsStarted.add(1, ordering: .relaxed)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var scratch = [UInt8](repeating: 0, count: 64)
        while true {
            let watched = state.withLock { state in state.registrations.map { (key: $0.key, registration: $0.value) } }
            var descriptors = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            descriptors += watched.map { pollfd(fd: $0.registration.fd, events: Int16(POLLIN), revents: 0) }
            let ready = descriptors.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), -1) }
            guard ready > 0 else { continue }  // EINTR
            if descriptors[0].revents != 0 {
                while scratch.withUnsafeMutableBytes({ read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
            }
            for (index, entry) in watched.enumerated() where descriptors[index + 1].revents != 0 {
                let registration = entry.registration
                if registration.capacity > buffer.count { buffer = [UInt8](repeating: 0, count: registration.capacity) }
                if !drain(registration, buffer: &buffer) {
                    _ = state.withLock { $0.registrations.removeValue(forKey: entry.key) }
                    registration.continuation.finish()
                    registration.descriptor.close()
                }
            }
        }
    }

    /// Reads what is queued (at most one batch) and yields it; `false` once the socket ended.
    private func drain(_ registration: Registration, buffer: inout [UInt8]) -> Bool {
        var batch: [[UInt8]] = []
        var open = true
        while batch.count < NotifyAcquisition.maximumBatch {
            let count = buffer.withUnsafeMutableBytes {
                recv(registration.fd, $0.baseAddress, min($0.count, registration.capacity), Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                batch.append(Array(buffer[0..<count]))
            } else if count < 0 && errno == EINTR {
                continue
            } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                open = false  // 0: the peer closed or we shut it down; another error: the socket is unusable
                break
            }
        }
        if !batch.isEmpty { registration.continuation.yield(batch) }
        return open
    }
}
