import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ServiceLifecycle
import SyncContract

/// `tether-server`: the reference sync backend and its operator commands. `Sources/TetherServerCommand` is a
/// thin entry point over this tree.
public struct ServerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tether-server",
        abstract: "Tether's reference sync backend (docs/specs/sync-api.yaml).",
        subcommands: [Serve.self, Token.self, Settings.self, Device.self, Stats.self, Health.self, Firmware.self])

    public init() {}
}

/// Where the data is: `--db PATH` (SQLite, the default kind) or `--postgres URL`.
public struct StorageOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: "SQLite database file (created if missing).")
    public var databasePath: String?

    @Option(name: .customLong("postgres"), help: "PostgreSQL URL: postgres://user[:password]@host[:port]/db or postgres://user@/db?host=/socket/dir")
    public var postgresURL: String?

    public init() {}

    public func validate() throws {
        guard (databasePath == nil) != (postgresURL == nil) else {
            throw ValidationError("give exactly one of --db PATH and --postgres URL")
        }
    }

    public func storage() throws -> ServerStorage {
        if let postgresURL { return .postgres(try PostgresURL.configuration(postgresURL)) }
        return .sqlite(path: databasePath ?? "tether-server.sqlite")
    }
}

extension ServerCommand {
    public struct Serve: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Serve the sync API until SIGTERM or SIGINT.")

        @OptionGroup public var storage: StorageOptions

        @Option(help: "Address and port to listen on (port 0 picks a free one).")
        public var listen = "127.0.0.1:8080"

        @Option(help: "PEM certificate chain: serve HTTPS.")
        public var tlsCert: String?

        @Option(help: "PEM private key of --tls-cert.")
        public var tlsKey: String?

        @Option(help: "Largest request body in bytes.")
        public var maxRequestBytes = SyncAPI.Defaults.maximumRequestBytes

        @Option(help: "Most commands in one push.")
        public var maxCommands = SyncAPI.Defaults.maximumCommandsPerPush

        @Option(help: "trace, debug, info, notice, warning, error or critical.")
        public var logLevel = "info"

        @Option(help: .hidden)
        public var injectFaults: String?

        @Option(help: .hidden)
        public var faultRate: Double = 0

        @Option(help: .hidden)
        public var faultSeed: UInt64 = 1

        public init() {}

        public func validate() throws {
            guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
            guard ListenAddress(listen) != nil else { throw ValidationError("--listen must be HOST:PORT") }
            guard maxRequestBytes >= 1024, maxCommands >= 1 else { throw ValidationError("limits must be at least 1024 bytes and 1 command") }
            guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
            if let injectFaults, Self.faults(injectFaults) == nil { throw ValidationError("--inject-faults: unknown fault in \(injectFaults)") }
        }

        public func run() async throws {
            let level = Logger.Level(rawValue: logLevel) ?? .info
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            let logger = Logger(label: "tether-server")
            guard let address = ListenAddress(listen) else { throw ValidationError("--listen must be HOST:PORT") }
            var configuration = ServerConfiguration(storage: try storage.storage())
            configuration.host = address.host
            configuration.port = address.port
            configuration.limits.maximumRequestBytes = maxRequestBytes
            configuration.limits.maximumCommandsPerPush = maxCommands
            if let tlsCert, let tlsKey { configuration.tls = .init(certificatePath: tlsCert, privateKeyPath: tlsKey) }
            let queued = injectFaults.flatMap(Self.faults) ?? []
            if !queued.isEmpty || faultRate > 0 {
                logger.warning("FAULT INJECTION IS ON: this server answers wrongly on purpose", metadata: ["faults": "\(queued)", "rate": "\(faultRate)"])
                let injector = FaultInjector(rate: faultRate, palette: queued.isEmpty ? [.status(500), .status(503, retryAfterSeconds: 1)] : queued, seed: faultSeed)
                if faultRate == 0 { for fault in queued { injector.enqueue(fault, scope: .push) } }
                configuration.faults = injector
            }
            let store = try configuration.storage.makeStore(logger: logger)
            let app = TetherServerApp(configuration: configuration, store: store, logger: logger) { port in
                // One line on stdout for scripts and tests that started us with port 0.
                print("listening on \(address.host):\(port)")
                fflush(nil)
            }
            let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        }

        static func faults(_ spec: String) -> [Fault]? {
            let faults = spec.split(separator: ",").map { Fault(spec: String($0)) }
            return faults.contains(where: { $0 == nil }) ? nil : faults.compactMap { $0 }
        }
    }

    public struct Token: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Gateway bearer tokens (stored as SHA-256 hashes only).", subcommands: [Create.self, List.self, Revoke.self])

        public init() {}

        public struct Create: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(abstract: "Mint a token for a gateway and print it once.")

            @OptionGroup public var storage: StorageOptions
            @Option(help: "The tenant whose devices the gateway may read and write.") public var tenant: String
            @Option(help: "The gateway's name within the tenant.") public var gateway: String
            @Option(help: "Write the token to this new file (mode 0600) instead of printing it.") public var output: String?

            public init() {}

            public func run() async throws {
                let storage = try storage.storage()
                let tenant = tenant
                let gateway = gateway
                let token = try await StoreAccess.with(storage, logger: Logger(label: "tether-server")) { store in
                    try await TokenAdministration.issue(store: store, tenant: tenant, gateway: gateway)
                }
                if let output {
                    try SecretFile.write(token.reveal + "\n", to: output)
                    print("token \(token.id) for \(tenant)/\(gateway) written to \(output) (mode 0600)")
                } else {
                    print(token.reveal)
                }
            }
        }

        public struct List: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(abstract: "List token ids (never the tokens).")
            @OptionGroup public var storage: StorageOptions

            public init() {}

            public func run() async throws {
                let tokens = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in try await store.tokens() }
                for token in tokens {
                    print("\(token.id)\t\(token.tenant)\t\(token.gateway)\tcreated \(token.createdAt)" + (token.revokedAt.map { "\trevoked \($0)" } ?? ""))
                }
            }
        }

        public struct Revoke: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(abstract: "Revoke a token by id: its gateway is refused from now on.")
            @OptionGroup public var storage: StorageOptions
            @Option(help: "The token id (the 16 hex digits after tether_).") public var id: String

            public init() {}

            public func run() async throws {
                let id = id
                let revoked = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in
                    try await store.revokeToken(id: id, at: Date())
                }
                guard revoked else { throw CommandFailure("no active token \(id)") }
                print("revoked \(id)")
            }
        }
    }

    public struct Settings: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Desired device settings, as the backend wants them.", subcommands: [SetDesired.self])
        public init() {}

        public struct SetDesired: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(commandName: "set", abstract: "Replace a device's desired settings; every gateway of the tenant pulls them.")
            @OptionGroup public var storage: StorageOptions
            @Option public var tenant: String
            @Option public var serial: String
            @Option public var sensitivity: Int?
            @Option public var ledBrightness: Int?
            @Option public var haptic: Bool?
            @Option public var sleepTimeout: Int?
            @Option public var dailyLimit: Int?

            public init() {}

            public func run() async throws {
                let document = SettingsDocument(
                    sensitivity: sensitivity, ledBrightness: ledBrightness, hapticFeedback: haptic, sleepTimeoutSeconds: sleepTimeout, dailyLimit: dailyLimit)
                if let problem = document.problem { throw ValidationError(problem) }
                let tenant = tenant
                let serial = serial
                let outcome = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in
                    try await store.replaceDesiredSettings(tenant: tenant, serial: serial, desired: document, author: .backend, origin: nil, ifMatch: nil)
                }
                switch outcome {
                case .updated(let resource): print("\(serial): settings version \(resource.version)")
                case .noSuchDevice: throw CommandFailure("no device \(serial) in tenant \(tenant)")
                case .versionMismatch(let current): throw CommandFailure("settings moved to version \(current); try again")
                }
            }
        }
    }

    public struct Device: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "The tenant's device registry.", subcommands: [Delete.self])
        public init() {}

        public struct Delete: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(abstract: "Delete a device from the registry; gateways pull the deletion.")
            @OptionGroup public var storage: StorageOptions
            @Option public var tenant: String
            @Option public var serial: String

            public init() {}

            public func run() async throws {
                let tenant = tenant
                let serial = serial
                let version = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in
                    try await store.deleteDevice(tenant: tenant, serial: serial)
                }
                guard let version else { throw CommandFailure("no device \(serial) in tenant \(tenant)") }
                print("\(serial): deleted (version \(version))")
            }
        }
    }

    public struct Stats: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Rows per table for one tenant.")
        @OptionGroup public var storage: StorageOptions
        @Option public var tenant: String

        public init() {}

        public func run() async throws {
            let tenant = tenant
            let s = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in try await store.statistics(tenant: tenant) }
            print("devices \(s.devices) (deleted \(s.deletedDevices))\nevents \(s.events)\ntelemetry \(s.telemetry)\nsettings \(s.settings)")
            print("applied commands \(s.appliedCommands)\nfeed entries \(s.feedEntries)")
        }
    }
}

/// A command that was well formed but could not be done (no such device, no such token): reported without the
/// usage text that ArgumentParser prints for invalid input.
public struct CommandFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}

/// `HOST:PORT`, with `[v6]:PORT` for IPv6 literals.
public struct ListenAddress: Hashable, Sendable {
    public var host: String
    public var port: Int

    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.host = host
        self.port = port
    }
}

/// Writes a secret to a new file that only its owner can read: created 0600 with O_EXCL, never over an existing
/// file (which might be a link planted elsewhere).
public enum SecretFile {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public static func write(_ text: String, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard result > 0 else { throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
            written += result
        }
        guard fsync(descriptor) == 0 else { throw Failure(description: "cannot sync \(path): \(String(cString: strerror(errno)))") }
    }
}
