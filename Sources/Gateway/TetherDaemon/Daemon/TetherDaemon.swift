import DBus
import Foundation
import HealthProfiles
import LinkProtocol
import Logging
import ServiceLifecycle
import UnixSignals
import TetherGateway
import TetherStore
import TetherSync
import TetherPrimitives

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
        let hub = SignalHub()

        var services: [any Service] = [
            CheckpointService(database: database, interval: configuration.storage.checkpointInterval, logger: storeLogger),
            RetentionService(
                retention: Retention(database: database, policy: RetentionPolicy(keepSynced: configuration.storage.retention)),
                interval: configuration.storage.retentionInterval, clock: WallClock.now, logger: storeLogger),
            StoreSampler(store: store, metrics: metrics, health: health, interval: .seconds(5), logger: storeLogger, notifier: notifier),
        ]

        // The device sessions: BlueZ on the configured bus, events through the daemon's one group committer.
        let bluezConnection: DBusConnection
        do {
            bluezConnection = try await DBusConnection.connect(to: Self.busAddress(configuration.bluetooth.bus))
        } catch {
            throw DaemonError("cannot connect to the bus BlueZ is on (\(configuration.bluetooth.bus)): \(error)")
        }
        // StartNotify streams go through a wire-protocol connection (a third of the CPU per notification); if that
        // cannot connect (an address it does not speak), libdbus carries them as well.
        let notifications: DBusWireConnection?
        do {
            notifications = try await DBusWireConnection.connect(to: Self.busAddress(configuration.bluetooth.bus))
        } catch {
            logger.warning("StartNotify streams fall back to libdbus: \(error)")
            notifications = nil
        }
        let healthLane = configuration.health.enabled ? HealthHotLane(database: database, committer: committer) : nil
        let gateway = Gateway(
            connection: bluezConnection, notifications: notifications,
            storage: GatewayStorage(database: database, committer: committer),
            configuration: gatewayConfiguration(
                ackLatency: AckLatencyRecorder(metrics: metrics), health: healthLane, consentCodes: try consentCodes(logger: logger)))
        services.append(GatewayService(gateway: gateway, connection: bluezConnection, notifications: notifications))

        // Sync, when a backend is configured.
        var sync: SyncService<ContinuousClock>?
        if let serverURL = configuration.sync.serverURL {
            if let problem = SecretFileCheck.problem(at: configuration.sync.tokenFile) {
                throw DaemonError("sync.token_file: \(problem)")
            }
            do {
                var syncConfiguration = SyncConfiguration(
                    baseURL: serverURL.absoluteString, token: try BearerToken(contentsOfFile: configuration.sync.tokenFile))
                syncConfiguration.caCertificatePath = configuration.sync.caFile
                syncConfiguration.interval = configuration.sync.interval
                let syncLogger = makeLogger("tetherd.sync")
                let engine = try SyncEngine(database: database, configuration: syncConfiguration, logger: syncLogger)
                sync = SyncService(engine: engine, logger: syncLogger)
            } catch {
                throw DaemonError("cannot set up sync with \(serverURL.host ?? serverURL.absoluteString): \(error)")
            }
        }
        if let sync {
            services.append(sync)
            // Sync is triggered by the store's commits (every committed group can have queued outbox commands).
            committer.observeCommits { _ in sync.localWrite() }
        }
        services.append(GatewayObserver(gateway: gateway, sync: sync, hub: hub, metrics: metrics, logger: makeLogger("tetherd.gateway")))
        if let healthLane { services.append(HealthReadingObserver(lane: healthLane, hub: hub)) }

        let systemd = SystemdService(notifier: notifier, logger: logger) { health.verdict.healthy }
        let controlLogger = makeLogger("tetherd.control")
        let onReady = options.onReady
        let firmware = FirmwareUpdates(
            runner: FirmwareUpdateRunner(gateway: gateway, journal: FirmwareUpdateJournal(database: database)),
            trustedKeys: configuration.firmware.trustedKeys,
            imageDirectory: (configuration.gateway.stateDirectory as NSString).appendingPathComponent("firmware"),
            hub: hub, logger: makeLogger("tetherd.firmware"))
        services.append(FirmwareUpdateService(updates: firmware))
        let control = GatewayControl(store: store, state: state, gateway: gateway, sync: sync, logger: controlLogger, firmware: firmware)
        services.append(ControlService(
            bus: Self.busAddress(configuration.control.bus), health: health, logger: controlLogger,
            makeControl: { _ in control },
            onReady: { _, signals in
                hub.attach(signals)
                systemd.announceReady(status: "running")
                logger.notice("tetherd ready", metadata: ["version": "\(GatewayControl.version)"])
                onReady()
            },
            onStop: { hub.attach(nil) }))
        if configuration.metrics.enabled {
            services.append(MetricsEndpoint(
                address: configuration.metrics.listen, metrics: metrics, health: health, logger: makeLogger("tetherd.metrics"),
                onListening: options.onMetricsListening))
        }
        services.append(systemd)

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

extension TetherDaemon {
    static func busAddress(_ bus: DaemonConfiguration.Bus) -> DBusBusAddress {
        switch bus {
        case .system: .system
        case .address(let address): .address(address)
        }
    }

    /// The gateway's tunables from `[bluetooth]`.
    func gatewayConfiguration(
        ackLatency: AckLatencyRecorder, health: HealthHotLane? = nil, consentCodes: ConsentCodes = ConsentCodes()
    ) -> GatewayConfiguration {
        var gateway = GatewayConfiguration()
        gateway.health = health
        gateway.healthUserConsents = consentCodes.byAddress
        gateway.adapter = DBusObjectPath("/org/bluez/\(configuration.bluetooth.adapter)")
        gateway.supervisor.slotBudget = configuration.bluetooth.maximumConnections
        gateway.supervisor.backoffBase = configuration.bluetooth.backoffInitial
        gateway.supervisor.backoffCap = configuration.bluetooth.backoffMaximum
        configuration.bluetooth.notifyMethod.apply(to: &gateway)
        configuration.health.apply(to: &gateway)
        let settingsLogger = makeLogger("tetherd.settings")
        let healthLogger = makeLogger("tetherd.health")
        gateway.trace = { event in
            ackLatency.record(event)
            Self.logSettings(event, to: settingsLogger)
            Self.logHealthRecordDeletion(event, to: healthLogger)
            Self.logHealthRecordAudit(event, to: healthLogger)
            Self.logUserConsent(event, to: healthLogger)
        }
        return gateway
    }

    /// `[health] consent_codes_file` read (its mode and lines were checked with the configuration; checked again
    /// here, as the file may have changed). Only the count of users is logged, never a code.
    func consentCodes(logger: Logger) throws -> ConsentCodes {
        guard let path = configuration.health.consentCodesFile else { return ConsentCodes() }
        let codes: ConsentCodes
        do {
            codes = try ConsentCodes.load(path: path)
        } catch {
            throw DaemonError("health.consent_codes_file: \(error)")
        }
        logger.info("consent codes read", metadata: [
            "file": "\(path)", "devices": "\(codes.byAddress.count)", "users": "\(codes.userCount)",
        ])
        return codes
    }

    /// A multi-user device's answer to the Consent for one user: the address, the user index and the outcome. Never
    /// the code (the trace does not carry it).
    static func logUserConsent(_ event: GatewayTrace, to logger: Logger) {
        guard case .userConsent(let address, let userIndex, let outcome) = event else { return }
        let metadata: Logger.Metadata = ["address": "\(address)", "user_index": "\(userIndex)", "outcome": "\(outcome)"]
        switch outcome {
        case .consented:
            logger.info("user \(userIndex) consented", metadata: metadata)
        case .notAuthorized:
            logger.warning("user \(userIndex) not authorized: the device refused the consent code", metadata: metadata)
        case .failed, .timedOut:
            logger.warning("user \(userIndex) consent \(outcome)", metadata: metadata)
        case .interrupted, .notAttempted:
            logger.info("user \(userIndex) consent \(outcome): the link went down", metadata: metadata)
        }
    }

    /// SET_CONFIG and CONFIG_DATA at debug level, with versions and frame numbers: with the peripheral's log, a
    /// run whose stored reported version is not the device's shows which side lost the report (§7.11, §8.2).
    static func logSettings(_ event: GatewayTrace, to logger: Logger) {
        switch event {
        case .settings(let address, .setConfigSent(let config, let sequence, let attempt)):
            logger.debug("SET_CONFIG sent", metadata: [
                "address": "\(address)", "version": "\(config.version)", "sequence": "\(sequence.rawValue)",
                "attempt": "\(attempt)",
            ])
        case .settings(let address, .configDataReceived(let config, let sequence)):
            logger.debug("CONFIG_DATA received", metadata: [
                "address": "\(address)", "version": "\(config.version)", "sequence": "\(sequence.rawValue)",
            ])
        case .settings(let address, .configDataRepeated(let config, let sequence)):
            logger.debug("CONFIG_DATA repeated, not stored again", metadata: [
                "address": "\(address)", "version": "\(config.version)", "sequence": "\(sequence.rawValue)",
            ])
        case .settingsStored(let address, let batch, let config):
            logger.debug("CONFIG_DATA stored", metadata: [
                "address": "\(address)", "version": "\(config.version)", "batch": "\(batch)",
            ])
        case .received, .submitted, .wrote, .committed, .persistFailed, .healthRecordDeletion, .healthRecordAudit, .userConsent:
            break
        }
    }

    /// Looks for vanished records (`[health] audit_vanished_records`): records tombstoned are a notice (readings
    /// deleted on the backend), an inconclusive look is info (the next connection looks again), the rest debug.
    static func logHealthRecordAudit(_ event: GatewayTrace, to logger: Logger) {
        guard case .healthRecordAudit(let report) = event else { return }
        var metadata: Logger.Metadata = ["address": "\(report.address)", "service": "\(report.service)", "epoch": "\(report.epoch)"]
        if !report.keys.isEmpty {
            metadata["records"] = "\(report.keys.map(String.init).joined(separator: ","))"
            metadata["tombstones"] = "\(report.tombstones)"
        }
        if let reason = report.reason { metadata["reason"] = "\(reason)" }
        switch report.outcome {
        case .vanished: logger.notice("records vanished from the device; their samples are deleted", metadata: metadata)
        case .inconclusive: logger.info("could not tell whether records vanished from the device", metadata: metadata)
        case .intact, .skipped: logger.debug("no records vanished from the device", metadata: metadata)
        case .nothingToDelete: logger.debug("records gone from the device with no sample left to delete", metadata: metadata)
        }
    }

    /// Deletions of acknowledged records on health devices (`[health] delete_acknowledged_records`): one made is a
    /// notice (the device's memory changed), one the device refused or did not finish a warning, none made debug.
    static func logHealthRecordDeletion(_ event: GatewayTrace, to logger: Logger) {
        guard case .healthRecordDeletion(let report) = event else { return }
        var metadata: Logger.Metadata = [
            "address": "\(report.address)", "service": "\(report.service)", "epoch": "\(report.epoch)",
        ]
        if let through = report.through { metadata["through"] = "\(through)" }
        if let reason = report.reason { metadata["reason"] = "\(reason)" }
        switch report.outcome {
        case .deleted: logger.notice("deleted the device's acknowledged records", metadata: metadata)
        case .refused: logger.warning("the device refused to delete records; not asked again on this link", metadata: metadata)
        case .interrupted: logger.warning("deleting the device's acknowledged records did not finish", metadata: metadata)
        case .declined: logger.debug("no records to delete from the device", metadata: metadata)
        }
    }
}

extension DaemonConfiguration.NotifyMethod {
    /// `[bluetooth] notify_method` as the gateway's subscription rules:
    /// - `auto`: AcquireNotify, and StartNotify for a device whose AcquireNotify BlueZ refuses (remembered).
    /// - `acquire-notify`: AcquireNotify only; a refusal is the device's error and the supervisor retries.
    /// - `start-notify`: StartNotify only (Value PropertiesChanged over D-Bus).
    func apply(to gateway: inout GatewayConfiguration) {
        switch self {
        case .auto:
            gateway.notifyPreference = .acquireFirst
        case .acquireNotify:
            gateway.notifyPreference = .acquireOnly
        case .startNotify:
            gateway.notifyPreference = .startNotifyOnly
        }
    }
}

extension DaemonConfiguration.Health {
    /// `[health] write_device_time` and `device_time_tolerance` as the gateway's `TimeWritePolicy.Mode`;
    /// `delete_acknowledged_records` as its deletion policy.
    func apply(to gateway: inout GatewayConfiguration) {
        gateway.healthRecordDeletion = HealthDevicePolicy(addresses: deleteAcknowledgedRecords)
        gateway.healthVanishedRecordAudit = HealthDevicePolicy(addresses: auditVanishedRecords)
        switch writeDeviceTime {
        case .never: gateway.healthTimeWrite = .never
        case .whenNotSet: gateway.healthTimeWrite = .whenClockNotSet
        case .whenDrifted: gateway.healthTimeWrite = .whenSkewExceeds(deviceTimeTolerance)
        case .always: gateway.healthTimeWrite = .always
        }
    }
}
