import Foundation
import Glibc

/// Plain threads (never Swift concurrency threads: they block in poll or recv) whose names reach the kernel, so
/// that `top -H`, `ps -L`, gdb and /proc/PID/task/TID/comm tell a connection's loop from a notification reader.
///
/// Foundation's `Thread.name`, set before `start()`, stays inside Foundation on Linux: the kernel keeps the
/// process's name for the thread. So the new thread names itself, first thing, by writing its own
/// /proc/thread-self/comm (proc(5): "a thread may modify its comm value"). That is what glibc's
/// `pthread_setname_np` does for a thread other than the caller; Swift's Glibc module does not offer it (a GNU
/// extension behind _GNU_SOURCE), nor `prctl(PR_SET_NAME)` (variadic).
public enum NamedThread {
    /// Linux keeps 16 bytes with the NUL (TASK_COMM_LEN) and cuts a longer name.
    public static let maximumNameLength = 15

    /// Starts a thread that names itself `name` (at most `maximumNameLength` bytes) and runs `body`.
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            nameCurrentThread(name)
            body()
        }
        thread.name = name  // Foundation's own copy (Thread.current.name)
        thread.start()
    }

    /// Names the calling thread in the kernel; a longer name is cut to fit (whole characters). Best effort: a
    /// thread without its name still works, so a failure (no /proc) is ignored.
    public static func nameCurrentThread(_ name: String) {
        var name = name
        while name.utf8.count > maximumNameLength { name.removeLast() }
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = name.withCString { write(fd, $0, strlen($0)) }
    }
}
