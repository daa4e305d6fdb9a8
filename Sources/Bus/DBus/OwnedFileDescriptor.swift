import Glibc
import Synchronization

/// A Unix file descriptor this process owns: closed when the last reference goes away, unless taken first.
///
/// D-Bus passes descriptors (type `h`) by duplicating them into the receiver, who must close them. Wrapping every
/// received descriptor means a dropped reply cannot leak an fd, while `take()` lets a caller move the descriptor
/// into its own I/O type. Sending duplicates too, so a descriptor stays owned here after it has been sent.
public final class OwnedFileDescriptor: Sendable, Hashable, CustomStringConvertible {
    private let descriptor: Mutex<Int32?>

    /// Takes ownership of `fd`; a negative value makes an already-closed descriptor.
    public init(taking fd: Int32) {
        descriptor = Mutex(fd >= 0 ? fd : nil)
    }

    /// Owns a close-on-exec duplicate of `fd`, leaving `fd` with its current owner.
    public convenience init(duplicating fd: Int32) throws {
        let duplicate = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard duplicate >= 0 else {
            throw DBusError(.failed, "Cannot duplicate file descriptor \(fd): \(String(cString: strerror(errno)))")
        }
        self.init(taking: duplicate)
    }

    deinit {
        close()
    }

    /// The descriptor while it is still owned here, or nil after `take()` or `close()`.
    ///
    /// The value is only borrowed: it stays valid until this object is closed, taken or deinitialised.
    public var rawValue: Int32? {
        descriptor.withLock { $0 }
    }

    /// Runs `body` with the descriptor, holding it open for the duration (a concurrent `close()` waits).
    public func withDescriptor<Result>(_ body: (Int32) throws -> Result) rethrows -> Result? {
        try descriptor.withLock { fd in
            guard let fd else { return nil }
            return try body(fd)
        }
    }

    /// Gives the descriptor to the caller, who must close it; nil if it was already taken or closed.
    public func take() -> Int32? {
        descriptor.withLock { fd in
            defer { fd = nil }
            return fd
        }
    }

    /// Closes the descriptor now instead of at deinit. Closing twice is harmless.
    public func close() {
        if let fd = take() {
            _ = Glibc.close(fd)
        }
    }

    public static func == (lhs: OwnedFileDescriptor, rhs: OwnedFileDescriptor) -> Bool {
        lhs === rhs
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }

    public var description: String {
        if let fd = rawValue { "fd \(fd)" } else { "fd (closed)" }
    }
}
