import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// CPU time of processes, from /proc (Linux): this process, a child, or a PostgreSQL cluster's postmaster with
/// its backends (and the backends that already exited, counted in the postmaster's cutime/cstime).
enum ProcessMeter {
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User + system seconds of this process (all threads).
    static func selfCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// User + system seconds of one process; with `children`, plus its reaped children's.
    static func cpu(pid: pid_t, children: Bool = false) -> Double {
        guard let fields = stat(pid) else { return 0 }
        // Fields after the command: state(3) … utime(14) stime(15) cutime(16) cstime(17), 1-based.
        let utime = Double(fields[11]) ?? 0
        let stime = Double(fields[12]) ?? 0
        let cutime = children ? Double(fields[13]) ?? 0 : 0
        let cstime = children ? Double(fields[14]) ?? 0 : 0
        return (utime + stime + cutime + cstime) / ticksPerSecond
    }

    /// A postmaster and its live children, plus children that already exited.
    static func clusterCPU(postmaster: pid_t) -> Double {
        var total = cpu(pid: postmaster, children: true)
        for pid in allPIDs() where parent(of: pid) == postmaster { total += cpu(pid: pid) }
        return total
    }

    static func parent(of pid: pid_t) -> pid_t? {
        stat(pid).flatMap { pid_t($0[1]) }
    }

    /// /proc/PID/stat fields after the parenthesised command, so index 0 is field 3 (state).
    private static func stat(_ pid: pid_t) -> [String]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ").map(String.init)
    }

    private static func allPIDs() -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }
    }

    private static func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
}
