internal import CDBus
import Glibc
import Synchronization

/// The thread-safe front door of a connection's loop thread.
///
/// Everything a connection does to its socket happens on its one loop thread (`Core`: `ConnectionCore` for
/// libdbus connections, `WireConnectionCore` for wire-protocol ones). Other threads hand
/// it work as jobs: `submit` appends to a queue and bumps an eventfd that the loop polls beside the bus socket,
/// so the loop wakes immediately instead of polling on a timer. Once the loop has closed, `submit` runs the job
/// at once with no core, which is how every late request learns the connection is gone.
final class ConnectionLoop<Core: AnyObject>: Sendable {
    /// Work for the loop thread; the argument is nil when the connection is already closed.
    typealias Job = @Sendable (Core?) -> Void

    private struct State {
        var jobs: [Job] = []
        var stopRequested = false
        var isClosed = false
        var hasExited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let unixFDPassing = Atomic<Bool>(false)

    /// The eventfd the loop polls; written only under `state`'s lock and only while the loop is open, so it is
    /// never written after `finishExit()` closes it.
    let wakeupDescriptor: Int32

    init() throws {
        let descriptor = cdbus_wakeup_fd_create()
        guard descriptor >= 0 else {
            throw DBusError(.failed, "Cannot create the connection's wakeup eventfd: \(String(cString: strerror(errno)))")
        }
        wakeupDescriptor = descriptor
    }

    /// Queues `job` for the loop thread. Returns false (after running `job(nil)` here) if the loop has closed.
    @discardableResult
    func submit(_ job: @escaping Job) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.isClosed else { return false }
            state.jobs.append(job)
            signalWakeup()
            return true
        }
        if !accepted {
            job(nil)
        }
        return accepted
    }

    /// Asks the loop to close the connection and exit; returns at once.
    func requestStop() {
        state.withLock { state in
            guard !state.isClosed, !state.stopRequested else { return }
            state.stopRequested = true
            signalWakeup()
        }
    }

    /// Whether the transport negotiated Unix fd passing (known once the connection is open).
    var canPassUnixFDs: Bool {
        unixFDPassing.load(ordering: .acquiring)
    }

    func setCanPassUnixFDs(_ value: Bool) {
        unixFDPassing.store(value, ordering: .releasing)
    }

    /// Fails early, on the caller's thread, for a message this transport cannot carry (libdbus would abort).
    func requireTransportCanCarry(_ message: MessageReference) throws {
        if message.containsUnixFDs, !canPassUnixFDs {
            throw DBusError(.notSupported, "This connection cannot carry Unix file descriptors")
        }
    }

    /// Whether the loop still accepts work.
    var isOpen: Bool {
        state.withLock { !$0.isClosed }
    }

    /// Suspends until the loop thread has exited and released the connection.
    func waitForExit() async {
        await withCheckedContinuation { continuation in
            let exited = state.withLock { state -> Bool in
                if state.hasExited { return true }
                state.exitWaiters.append(continuation)
                return false
            }
            if exited {
                continuation.resume()
            }
        }
    }

    // MARK: Loop-thread side

    /// The queued jobs and whether a stop was requested.
    func takeWork() -> (jobs: [Job], stop: Bool) {
        state.withLock { state in
            defer { state.jobs.removeAll() }
            return (state.jobs, state.stopRequested)
        }
    }

    /// Clears the eventfd counter after poll() reported it readable.
    func drainWakeup() {
        var counter: UInt64 = 0
        _ = read(wakeupDescriptor, &counter, MemoryLayout<UInt64>.size)
    }

    /// Stops accepting work and returns whatever was queued, for the loop to fail.
    func close() -> [Job] {
        state.withLock { state in
            state.isClosed = true
            defer { state.jobs.removeAll() }
            return state.jobs
        }
    }

    /// Called last on the loop thread: releases the eventfd and wakes everyone waiting for the exit.
    func finishExit() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isClosed = true
            state.hasExited = true
            _ = Glibc.close(wakeupDescriptor)
            defer { state.exitWaiters.removeAll() }
            return state.exitWaiters
        }
        for waiter in waiters {
            waiter.resume()
        }
    }

    /// Must be called with the lock held (the eventfd is closed under the same lock).
    private func signalWakeup() {
        var one: UInt64 = 1
        _ = write(wakeupDescriptor, &one, MemoryLayout<UInt64>.size)
    }
}
