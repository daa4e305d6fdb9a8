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

    /// - Parameter durable: `false` turns off fsync and synchronous commit (tests); the benchmark keeps them on.
    /// Throws `Unavailable` or `StartFailed`.
    public static func start(durable: Bool = false) throws -> PostgresCluster {
        let bin = try findBinaries()
        let runAs = geteuid() == 0 ? "postgres" : nil
        if let runAs, getpwnam(runAs) == nil {
            throw Unavailable(description: "running as root and there is no \(runAs) user to run PostgreSQL")
        }
        var template = Array("/tmp/tether-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw StartFailed(description: "mkdtemp failed: \(String(cString: strerror(errno)))") }
        let directory = String(cString: made)
        let cluster = PostgresCluster(directory: directory, binDirectory: bin, runAs: runAs)
        do {
            if let runAs, let account = getpwnam(runAs) {
                guard chown(directory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                    throw StartFailed(description: "cannot hand \(directory) to \(runAs): \(String(cString: strerror(errno)))")
                }
            }
            try cluster.run(
                "initdb", ["-D", cluster.dataDirectory, "-U", cluster.user, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"])
            var options = [
                "-c listen_addresses=''", "-c unix_socket_directories=\(directory)", "-c max_connections=100", "-c shared_buffers=128MB",
                "-c max_wal_size=2GB",
            ]
            if !durable { options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"] }
            try cluster.run("pg_ctl", ["start", "-w", "-t", "60", "-D", cluster.dataDirectory, "-l", "\(directory)/server.log", "-o", options.joined(separator: " ")])
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
    /// same error to every caller once the first start failed.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { state throws -> PostgresCluster in
            switch state {
            case .some(.success(let cluster)): return cluster
            case .some(.failure(let error)): throw error
            case nil:
                do {
                    let cluster = try start()
                    state = .success(cluster)
                    clusterToStopAtExit.withLock { $0 = cluster }
                    atexit { clusterToStopAtExit.withLock { $0?.destroy() } }
                    return cluster
                } catch {
                    state = .failure(error)
                    throw error
                }
            }
        }
    }

    private init(directory: String, binDirectory: String, runAs: String?) {
        self.directory = directory
        self.socketDirectory = directory
        self.binDirectory = binDirectory
        self.runAs = runAs
    }

    var dataDirectory: String { directory + "/data" }

    /// A new, empty database.
    public func createDatabase(_ name: String) throws -> String {
        try run("psql", ["-h", socketDirectory, "-U", user, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", "CREATE DATABASE \"\(name)\""])
        return name
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

    /// Stops the server and deletes its files.
    public func destroy() {
        _ = try? run("pg_ctl", ["stop", "-m", "immediate", "-D", dataDirectory, "-w", "-t", "30"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        let path = "\(binDirectory)/\(tool)"
        let result: ChildProcess.Result
        do {
            if let runAs {
                result = try ChildProcess.runBlocking("/usr/sbin/runuser", ["-u", runAs, "--", path] + arguments, directory: directory)
            } else {
                result = try ChildProcess.runBlocking(path, arguments, directory: directory)
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

private let sharedCluster = Mutex<Result<PostgresCluster, any Error>?>(nil)
private let clusterToStopAtExit = Mutex<PostgresCluster?>(nil)
