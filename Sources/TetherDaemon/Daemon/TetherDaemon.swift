import DBus
import Foundation
import LinkProtocol
import Logging
import ServiceLifecycle
import UnixSignals
import TetherStore

/// tetherd: one `ServiceGroup` over the store services, the device sessions, sync, the control API and the
/// metrics endpoint, with systemd's notify protocol around it.
///
/// Start order is the list order and shutdown the reverse (swift-service-lifecycle): the systemd service hears
/// of the shutdown first (STOPPING=1), the control API then releases its name, sync and the device sessions stop
/// (finishing commits, ACKing what was committed, disconnecting), and the store's background work stops last.
public struct TetherDaemon: Sendable {
    public struct Options: Sendable {
        /// Signals that start a graceful shutdown; empty when the daemon runs inside a test process.
        public var gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint]
        public var environment: [String: String] = ProcessInfo.processInfo.environment
        /// Hears the metrics port actually bound (a test listens on port 0).
        public var onMetricsListening: @Sendable (Int) -> Void = { _ in }
        /// Hears the daemon ready (control API on the bus).
        public var onReady: @Sendable () -> Void = {}
        public var logHandler: (@Sendable (String, Logger.Level) -> any LogHandler)?
        /// Adds services that need the store and the daemon's state (the device sessions, sync), in start order.
        public var extensions: [any DaemonExtension] = []
        public init() {}
    }

    public let configuration: DaemonConfiguration
    public let options: Options

    public init(configuration: DaemonConfiguration, options: Options = Options()) {
        self.configuration = configuration
        self.options = options
    }

    public func makeLogger(_ label: String) -> Logger {
        let level = configuration.log.level.loggerLevel
        let factory = options.logHandler
        return Logger(label: label) { label in
            if let factory { return factory(label, level) }
            return DaemonLogHandler(label: label, level: level, journald: options.environment["JOURNAL_STREAM"] != nil)
        }
    }

    public func run() async throws {
        let logger = makeLogger("tetherd")
        let notifier = SystemdNotifier(environment: options.environment)
        try? notifier.status("opening the database")

        var databaseConfiguration = GatewayDatabase.Configuration()
        databaseConfiguration.limits = StorageLimits(
            maximumDatabaseBytes: configuration.storage.maximumDatabaseBytes,
            minimumFreeDiskBytes: configuration.storage.minimumFreeDiskBytes)
        let database: GatewayDatabase
        do {
            database = try GatewayDatabase(path: configuration.gateway.database, configuration: databaseConfiguration)
        } catch {
            throw DaemonError("cannot open the database \(configuration.gateway.database): \(error)")
        }
        let storeLogger = makeLogger("tetherd.store")
        let consumption = ConsumptionService(database: database)
        let committer = GroupCommitter(service: consumption, onStatusChange: { status in
            switch status {
            case .accepting: storeLogger.notice("storage accepts new data again")
            case .refusing(let error): storeLogger.error("storage refuses new data; devices keep their events", metadata: ["reason": "\(error)"])
            }
        })
        let store = StoreQueries(database: database, committer: committer, consumption: consumption)
        let state = DaemonState(startedAt: WallClock.now().nanoseconds, adapter: configuration.bluetooth.adapter)
        let metrics = DaemonMetrics()
        let health = HealthState()
        let context = DaemonContext(
            configuration: configuration, store: store, state: state, metrics: metrics, makeLogger: makeLogger)

        var services: [any Service] = [
            CheckpointService(database: database, interval: configuration.storage.checkpointInterval, logger: storeLogger),
            RetentionService(
                retention: Retention(database: database, policy: RetentionPolicy(keepSynced: configuration.storage.retention)),
                interval: configuration.storage.retentionInterval, clock: WallClock.now, logger: storeLogger),
            StoreSampler(store: store, metrics: metrics, health: health, interval: .seconds(5), logger: storeLogger),
        ]
        var deviceControl: (any DeviceControl)?
        var syncControl: (any SyncControl)?
        var signalSinks: [@Sendable (ControlSignals) -> Void] = []
        for daemonExtension in options.extensions {
            let parts = try await daemonExtension.makeParts(context)
            services += parts.services
            deviceControl = parts.deviceControl ?? deviceControl
            syncControl = parts.syncControl ?? syncControl
            if let sink = parts.onControlSignals { signalSinks.append(sink) }
        }

        let bus: DBusBusAddress = switch configuration.control.bus {
        case .system: .system
        case .address(let address): .address(address)
        }
        let controlLogger = makeLogger("tetherd.control")
        let onReady = options.onReady
        let finalDeviceControl = deviceControl
        let finalSyncControl = syncControl
        let sinks = signalSinks
        services.append(ControlService(
            bus: bus, health: health, logger: controlLogger,
            makeControl: { _ in
                GatewayControl(store: store, state: state, devices: finalDeviceControl, sync: finalSyncControl, logger: controlLogger)
            },
            onReady: { _, signals in
                for sink in sinks { sink(signals) }
                do { try notifier.ready(status: "running") } catch { logger.warning("cannot tell systemd we are ready: \(error)") }
                logger.notice("tetherd ready", metadata: ["version": "\(GatewayControl.version)"])
                onReady()
            }))
        if configuration.metrics.enabled {
            services.append(MetricsEndpoint(
                address: configuration.metrics.listen, metrics: metrics, health: health, logger: makeLogger("tetherd.metrics"),
                onListening: options.onMetricsListening))
        }
        services.append(SystemdService(notifier: notifier, logger: logger) { health.verdict.healthy })

        logger.info("starting", metadata: [
            "database": "\(configuration.gateway.database)", "adapter": "\(configuration.bluetooth.adapter)",
            "sync": "\(configuration.sync.serverURL.map { $0.host ?? "?" } ?? "off")",
        ])
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: options.gracefulShutdownSignals,
            logger: makeLogger("tetherd.lifecycle")))
        try await group.run()
        let statistics = committer.statistics
        logger.notice("stopped", metadata: [
            "transactions": "\(statistics.transactions)", "batches_committed": "\(statistics.batchesCommitted)",
        ])
    }
}

/// What the daemon hands to the parts added through `DaemonExtension`.
public struct DaemonContext: Sendable {
    public let configuration: DaemonConfiguration
    public let store: StoreQueries
    public let state: DaemonState
    public let metrics: DaemonMetrics
    public let makeLogger: @Sendable (String) -> Logger
}

/// The services a daemon part adds and the control API hooks it serves.
public struct DaemonParts: Sendable {
    public var services: [any Service]
    public var deviceControl: (any DeviceControl)?
    public var syncControl: (any SyncControl)?
    /// Receives the signal emitter once the control API is on the bus.
    public var onControlSignals: (@Sendable (ControlSignals) -> Void)?

    public init(services: [any Service], deviceControl: (any DeviceControl)? = nil, syncControl: (any SyncControl)? = nil,
                onControlSignals: (@Sendable (ControlSignals) -> Void)? = nil) {
        self.services = services
        self.deviceControl = deviceControl
        self.syncControl = syncControl
        self.onControlSignals = onControlSignals
    }
}

/// A part of the daemon built from its context: the device sessions (TetherGateway) and sync (TetherSync).
public protocol DaemonExtension: Sendable {
    func makeParts(_ context: DaemonContext) async throws -> DaemonParts
}
