internal import CDBus
import Glibc

/// libdbus's watches (descriptors it wants polled) and timeouts, kept for the loop thread's poll().
///
/// libdbus announces these through callbacks that it invokes with its connection lock held, so the callbacks
/// only record state here; the loop thread reads the table before each poll() and hands readiness back with
/// `dbus_watch_handle` / `dbus_timeout_handle`. All of it runs on the loop thread: no other thread ever calls
/// into the connection, so libdbus never invokes these callbacks elsewhere.
final class MainLoopSources {
    private var watches: [OpaquePointer] = []
    private var timeouts: [ScheduledTimeout] = []

    private struct ScheduledTimeout {
        let timeout: OpaquePointer
        var deadline: ContinuousClock.Instant?
    }

    /// Registers the callbacks; libdbus immediately reports the watches it already has.
    func install(on connection: OpaquePointer) throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        let watchesInstalled = dbus_connection_set_watch_functions(
            connection,
            { watch, context in
                guard let watch, let context else { return 0 }
                MainLoopSources.from(context).watches.append(watch)
                return 1
            },
            { watch, context in
                guard let watch, let context else { return }
                MainLoopSources.from(context).watches.removeAll { $0 == watch }
            },
            { _, _ in
                // Enabled state is read from the watch itself before every poll().
            },
            context,
            nil
        )
        let timeoutsInstalled = dbus_connection_set_timeout_functions(
            connection,
            { timeout, context in
                guard let timeout, let context else { return 0 }
                let sources = MainLoopSources.from(context)
                sources.timeouts.append(ScheduledTimeout(timeout: timeout, deadline: nil))
                sources.reschedule(timeout, from: .now)
                return 1
            },
            { timeout, context in
                guard let timeout, let context else { return }
                MainLoopSources.from(context).timeouts.removeAll { $0.timeout == timeout }
            },
            { timeout, context in
                guard let timeout, let context else { return }
                MainLoopSources.from(context).reschedule(timeout, from: .now)
            },
            context,
            nil
        )
        guard watchesInstalled != 0, timeoutsInstalled != 0 else {
            uninstall(from: connection)
            throw DBusError(.noMemory, "libdbus could not register the loop's watches")
        }
    }

    /// Unregisters the callbacks (libdbus reports every watch and timeout as removed).
    func uninstall(from connection: OpaquePointer) {
        _ = dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
        _ = dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
        watches.removeAll()
        timeouts.removeAll()
    }

    /// pollfd entries for the enabled watches, with the watch each entry belongs to.
    func pollEntries() -> [(descriptor: pollfd, watch: OpaquePointer)] {
        watches.compactMap { watch in
            guard dbus_watch_get_enabled(watch) != 0 else { return nil }
            let fd = dbus_watch_get_unix_fd(watch)
            guard fd >= 0 else { return nil }
            let flags = dbus_watch_get_flags(watch)
            var events: Int16 = 0
            if flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
            if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
            return (pollfd(fd: fd, events: events, revents: 0), watch)
        }
    }

    /// Passes poll() results to libdbus, skipping watches removed meanwhile by an earlier handler.
    func handle(_ ready: [(revents: Int16, watch: OpaquePointer)]) {
        for (revents, watch) in ready where revents != 0 {
            guard watches.contains(watch), dbus_watch_get_enabled(watch) != 0 else { continue }
            var flags: UInt32 = 0
            if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
            if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
            if revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
            if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
            guard flags != 0 else { continue }
            _ = dbus_watch_handle(watch, flags)
        }
    }

    /// The earliest enabled libdbus timeout.
    var nextDeadline: ContinuousClock.Instant? {
        timeouts.compactMap(\.deadline).min()
    }

    /// Runs every timeout that is due; libdbus timeouts repeat until removed or disabled.
    func fireExpiredTimeouts(now: ContinuousClock.Instant) {
        let due = timeouts.filter { $0.deadline.map { $0 <= now } ?? false }.map(\.timeout)
        for timeout in due where timeouts.contains(where: { $0.timeout == timeout }) {
            _ = dbus_timeout_handle(timeout)
            reschedule(timeout, from: .now)
        }
    }

    private func reschedule(_ timeout: OpaquePointer, from now: ContinuousClock.Instant) {
        guard let index = timeouts.firstIndex(where: { $0.timeout == timeout }) else { return }
        if dbus_timeout_get_enabled(timeout) != 0 {
            timeouts[index].deadline = now + .milliseconds(Int64(dbus_timeout_get_interval(timeout)))
        } else {
            timeouts[index].deadline = nil
        }
    }

    private static func from(_ context: UnsafeMutableRawPointer) -> MainLoopSources {
        Unmanaged<MainLoopSources>.fromOpaque(context).takeUnretainedValue()
    }
}
