import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real file system of a fixed size: a tmpfs mounted (`mount -t tmpfs -o size=N`) on a fresh temporary
/// directory, so that a test sees the disk really fill: `write` fails with ENOSPC, SQLite answers SQLITE_FULL, and
/// `statvfs` reports what is left, unlike `max_page_count`, which SQLite enforces itself before touching the disk.
///
/// A filler file takes space away (`fill(leaving:)`, `fillCompletely()`) and gives it back (`release()`), as a
/// log growing beside the database and then being rotated away would.
///
/// Mounting needs root (CAP_SYS_ADMIN). `mayMount` says whether to try; under CI it is always true, so that a
/// machine that cannot mount fails the test with the reason instead of skipping it.
public final class SizeLimitedFilesystem: @unchecked Sendable {
    /// The mount point: a directory of its own under the system temporary directory.
    public let path: String
    /// The size the tmpfs was mounted with.
    public let bytes: Int64
    private var filler: String { (path as NSString).appendingPathComponent(".filler") }
    private var mounted = true

    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    /// Whether a test should try to mount: running as root, or under CI (where not being able to is a failure).
    public static var mayMount: Bool {
        getuid() == 0 || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Mounts a tmpfs of `bytes` (rounded up to whole pages by the kernel) on a new temporary directory.
    public init(bytes: Int64) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-fs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let result = try ChildProcess.runBlocking("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes),mode=0700", "tmpfs", directory])
        guard result.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw Unavailable(description: """
                cannot mount a \(bytes)-byte tmpfs on \(directory) (uid \(getuid()); mounting needs root): \
                mount exited \(result.status): \(result.standardError.trimmingCharacters(in: .whitespacesAndNewlines))
                """)
        }
        path = directory
        self.bytes = bytes
    }

    deinit { unmount() }

    /// A path inside the file system.
    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// Bytes an unprivileged writer could still write (`statvfs`: `f_bavail · f_frsize`).
    public var freeBytes: Int64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Grows the filler file until at most `bytes` are left free (nothing happens if fewer already are).
    public func fill(leaving bytes: Int64) throws {
        let wanted = freeBytes - bytes
        guard wanted > 0 else { return }
        try append(wanted)
    }

    /// Grows the filler file until the file system refuses another byte (ENOSPC).
    public func fillCompletely() throws {
        try append(.max)
    }

    /// Deletes the filler file: the space it took is free again.
    public func release() {
        unlink(filler)
    }

    /// Detaches the mount (lazily: a database a test forgot to close keeps its files until it is released) and
    /// removes the mount point. Called on release.
    public func unmount() {
        guard mounted else { return }
        mounted = false
        _ = try? ChildProcess.runBlocking("/bin/umount", ["--lazy", path])
        rmdir(path)
    }

    /// Writes zeros to the filler, `count` bytes or until ENOSPC. Real writes, not `fallocate`: tmpfs charges
    /// pages as they are written, so this is exactly the space SQLite will not find.
    private func append(_ count: Int64) throws {
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Unavailable(description: "cannot open \(filler): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 4096)
        var left = count
        while left > 0 {
            let size = Int(min(left, Int64(chunk.count)))
            let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, size) }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == ENOSPC { return }
                throw Unavailable(description: "writing \(filler): \(String(cString: strerror(errno)))")
            }
            if written == 0 { return }
            left -= Int64(written)
        }
    }
}
