import Foundation
import PostgresNIO
import Synchronization
import TetherTestSupport

/// A throwaway PostgreSQL cluster from Debian's binaries (`apt-get install postgresql`): `initdb` into a
/// temporary directory, `pg_ctl start` listening on a Unix socket only, stopped and deleted at process exit.
/// PostgreSQL refuses to run as root, so under root the binaries run as the `postgres` user (`runuser`).
///
/// One cluster serves the whole test process (`shared()`); suites and benchmarks take a fresh database each.
///
/// Everything that waits for a PostgreSQL program is async and never blocks a thread of Swift's concurrency pool:
/// that pool has one thread per core (two here), and the parallel test run once froze for 45 s while initdb ran under
/// a lock that every PostgreSQL test blocked on, starving every other test's timers and waits.
///
/// Two ways to have no cluster, kept apart: PostgreSQL is not installed (`Unavailable`: tests skip loudly, or fail
/// when `TETHER_REQUIRE_POSTGRES=1`), or it is installed and would not start (`StartFailed`: initdb, pg_ctl or psql
/// ran and failed; always a test failure, never a skip, because that is a broken machine or a broken harness).
public final class PostgresCluster: Sendable {
    /// PostgreSQL is not installed here (no server binaries, or no `postgres` account to run them as root).
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    /// PostgreSQL is installed but a step of starting the cluster failed.
    public struct StartFailed: Error, CustomStringConvertible {
        public var description: String
    }

    public let directory: String
    public let socketDirectory: String
    public let binDirectory: String
    public let user = "tether"
    private let runAs: String?
    /// The `-o` of `pg_ctl start`.
    private let serverOptions: String

    /// - Parameters:
    ///   - durable: `false` turns off fsync and synchronous commit (tests); the benchmark keeps them on.
    ///   - parent: where the cluster's directory is made (a `SizeLimitedFilesystem`, say); the system's temporary
    ///     directory by default. Under root the `postgres` user must be able to enter it.
    ///   - initdbOptions, serverOptions: more `initdb` arguments and `-c name=value` server settings.
    /// Throws `Unavailable` or `StartFailed`.
    public static func start(
        durable: Bool = false, parent: String = "/tmp", initdbOptions: [String] = [], serverOptions: [String] = []
    ) async throws -> PostgresCluster {
        let bin = try findBinaries()
        let runAs = geteuid() == 0 ? "postgres" : nil
        if let runAs, getpwnam(runAs) == nil {
            throw Unavailable(description: "running as root and there is no \(runAs) user to run PostgreSQL")
        }
        var template = Array("\(parent)/tether-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw StartFailed(description: "mkdtemp failed: \(String(cString: strerror(errno)))") }
        let directory = String(cString: made)
        var options = [
            "-c listen_addresses=''", "-c unix_socket_directories=\(directory)", "-c max_connections=100", "-c shared_buffers=128MB",
            "-c max_wal_size=2GB",
        ]
        if !durable { options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"] }
        options += serverOptions.map { "-c \($0)" }
        let cluster = PostgresCluster(directory: directory, binDirectory: bin, runAs: runAs, serverOptions: options.joined(separator: " "))
        do {
            if let runAs, let account = getpwnam(runAs) {
                guard chown(directory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                    throw StartFailed(description: "cannot hand \(directory) to \(runAs): \(String(cString: strerror(errno)))")
                }
            }
            try await cluster.run(
                "initdb", ["-D", cluster.dataDirectory, "-U", cluster.user, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"]
                    + initdbOptions)
            try await cluster.startServer()
        } catch let error as StartFailed {
            cluster.destroy()
            throw error
        } catch {
            cluster.destroy()
            throw StartFailed(description: "\(error)")
        }
        return cluster
    }

    /// The process's cluster, started on first use and stopped at exit. Throws `Unavailable` or `StartFailed`, the
    /// same error to every caller once the first start failed. Callers that come while it starts await the same
    /// start (a task), rather than blocking on a lock.
    public static func shared() async throws -> PostgresCluster {
        let starting = sharedCluster.withLock { task in
            if let task { return task }
            let started = Task<PostgresCluster, any Error> {
                let cluster = try await start()
                clusterToStopAtExit.withLock { $0 = cluster }
                atexit { clusterToStopAtExit.withLock { $0?.destroy() } }
                return cluster
            }
            task = started
            return started
        }
        return try await starting.value
    }

    private init(directory: String, binDirectory: String, runAs: String?, serverOptions: String) {
        self.directory = directory
        self.socketDirectory = directory
        self.binDirectory = binDirectory
        self.runAs = runAs
        self.serverOptions = serverOptions
    }

    /// Starts the server (again, after `stopServer`) and returns once it accepts connections.
    public func startServer() async throws {
        try await run("pg_ctl", ["start", "-w", "-t", "60", "-D", dataDirectory, "-l", "\(directory)/server.log", "-o", serverOptions])
    }

    /// Stops the server at once, as a crash would (`-m immediate`: no shutdown checkpoint; the next start recovers).
    public func stopServer() async throws {
        try await run("pg_ctl", ["stop", "-m", "immediate", "-w", "-t", "60", "-D", dataDirectory])
    }

    var dataDirectory: String { directory + "/data" }

    /// A new, empty database.
    public func createDatabase(_ name: String) async throws -> String {
        try await run("psql", ["-h", socketDirectory, "-U", user, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", "CREATE DATABASE \"\(name)\""])
        return name
    }

    /// Runs `sql` in `database` with psql (stops at the first error) and returns what it printed.
    @discardableResult
    public func psql(database: String, _ sql: String) async throws -> String {
        try await run("psql", ["-h", socketDirectory, "-U", user, "-d", database, "-v", "ON_ERROR_STOP=1", "-q", "-A", "-t", "-c", sql])
    }

    /// The URL `tether-server --postgres` takes for `database`.
    public func url(database: String) -> String {
        "postgres://\(user)@/\(database)?host=\(socketDirectory)"
    }

    public func configuration(database: String) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            unixSocketPath: "\(socketDirectory)/.s.PGSQL.5432", username: user, password: nil, database: database)
        configuration.options.maximumConnections = 20
        return configuration
    }

    /// Stops the server and deletes its files (blocking: it runs at process exit, from `atexit`).
    public func destroy() {
        let stop = [binDirectory + "/pg_ctl", "stop", "-m", "immediate", "-D", dataDirectory, "-w", "-t", "30"]
        if let runAs {
            _ = try? ChildProcess.runBlocking("/usr/sbin/runuser", ["-u", runAs, "--"] + stop, directory: directory)
        } else {
            _ = try? ChildProcess.runBlocking(stop[0], Array(stop.dropFirst()), directory: directory)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String]) async throws -> String {
        let path = "\(binDirectory)/\(tool)"
        let result: ChildProcess.Result
        do {
            if let runAs {
                result = try await ChildProcess.run(
                    "/usr/sbin/runuser", ["-u", runAs, "--", path] + arguments, directory: directory, timeout: .seconds(300))
            } else {
                result = try await ChildProcess.run(path, arguments, directory: directory, timeout: .seconds(300))
            }
        } catch {
            throw StartFailed(description: "\(tool) could not be run: \(error)")
        }
        guard result.status == 0 else {
            throw StartFailed(description: "\(tool) failed (\(result.status)): \((result.standardOutput + result.standardError).suffix(2000))")
        }
        return result.standardOutput
    }

    /// `TETHER_POSTGRES_BIN` names the directory of the server binaries (a PostgreSQL outside Debian's layout); it
    /// must hold initdb. Otherwise the newest of Debian's `/usr/lib/postgresql/<version>/bin`.
    private static func findBinaries() throws -> String {
        if let bin = ProcessInfo.processInfo.environment["TETHER_POSTGRES_BIN"], !bin.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: bin + "/initdb") else {
                throw StartFailed(description: "TETHER_POSTGRES_BIN=\(bin) has no executable initdb")
            }
            return bin
        }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions {
            let bin = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb") { return bin }
        }
        throw Unavailable(description: "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install -y postgresql)")
    }
}

private let sharedCluster = Mutex<Task<PostgresCluster, any Error>?>(nil)
private let clusterToStopAtExit = Mutex<PostgresCluster?>(nil)
