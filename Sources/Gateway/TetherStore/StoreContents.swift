import GRDB
import LinkProtocol

/// Every row of the store (or of one device), for `tether replay --db` to print and for tests to compare.
public struct StoreContents: Hashable, Sendable {
    public var devices: [DeviceRecord] = []
    public var boots: [BootRecord] = []
    public var anchors: [TimeAnchorRecord] = []
    public var events: [ConsumptionEventRecord] = []
    public var telemetry: [DeviceTelemetryRecord] = []
    public var settings: [DeviceSettingsRecord] = []
    public var outbox: [OutboxCommandRecord] = []
    public var cursors: [SyncCursorRecord] = []

    /// Rows per table, in schema order.
    public var counts: [(table: String, rows: Int)] {
        [
            ("device", devices.count), ("boot", boots.count), ("timeAnchor", anchors.count),
            ("consumptionEvent", events.count), ("deviceTelemetry", telemetry.count),
            ("deviceSettings", settings.count), ("outboxCommand", outbox.count), ("syncCursor", cursors.count),
        ]
    }

    /// One line per row, grouped by table: stable text for a terminal or an expected-output file.
    public func rendered() -> String {
        var lines: [String] = []
        let serials = Dictionary(uniqueKeysWithValues: devices.compactMap { device in device.id.map { ($0, device.serial) } })
        func serial(_ id: Int64) -> String { serials[id] ?? "#\(id)" }
        func optional<T>(_ value: T?) -> String { value.map { "\($0)" } ?? "-" }

        lines.append("device (\(devices.count))")
        for d in devices {
            lines.append("  \(d.serial) address=\(optional(d.address)) hw=\(optional(d.hardwareRevision)) fw=\(optional(d.firmwareVersion)) protocol=\(optional(d.protocolVersion)) capabilities=\(d.capabilities) latestBoot=\(optional(d.latestBoot)) pairing=\(d.pairingState.rawValue)")
        }
        lines.append("boot (\(boots.count))")
        for b in boots {
            lines.append("  \(serial(b.deviceId)) boot=\(b.bootCounter) prunedThrough=\(b.prunedThroughSequence) gaps=\(b.prunedGaps.map { "\($0.from)-\($0.through)" })")
        }
        lines.append("timeAnchor (\(anchors.count))")
        for a in anchors {
            lines.append("  \(serial(a.deviceId)) boot=\(a.bootCounter) deviceUs=\(a.deviceMicroseconds) gatewayNs=\(a.gatewayNanoseconds) uncertaintyNs=\(a.uncertaintyNanoseconds) rttNs=\(a.roundTripNanoseconds)")
        }
        lines.append("consumptionEvent (\(events.count))")
        for e in events {
            lines.append("  \(serial(e.deviceId))/\(e.bootCounter)/\(e.sequence) ticks=\(e.ticks) utcNs=\(optional(e.utcNanoseconds)) uncertaintyNs=\(optional(e.uncertaintyNanoseconds)) durationMs=\(e.durationMilliseconds) intensity=\(e.intensity) synced=\(e.syncedAt != nil)")
        }
        lines.append("deviceTelemetry (\(telemetry.count))")
        for t in telemetry {
            switch t.kind {
            case .battery:
                lines.append("  \(serial(t.deviceId)) battery at=\(t.receivedAt) mV=\(optional(t.batteryMillivolts)) percent=\(optional(t.batteryPercent)) charging=\(optional(t.isCharging))")
            case .sleep:
                lines.append("  \(serial(t.deviceId)) sleep at=\(t.receivedAt) reason=\(optional(t.sleepReason)) wakeAfterS=\(optional(t.wakeAfterSeconds))")
            }
        }
        lines.append("deviceSettings (\(settings.count))")
        for s in settings {
            lines.append("  \(serial(s.deviceId)) desired=v\(optional(s.desiredVersion)) by=\(optional(s.desiredChangedBy?.rawValue)) reported=v\(optional(s.reportedVersion)) base=v\(optional(s.baseVersion)) confirmed=\(s.isConfirmed) conflicts=\(s.conflicts.map(\.description))")
        }
        lines.append("outboxCommand (\(outbox.count))")
        for c in outbox {
            lines.append("  \(optional(c.seq)) \(c.operation.rawValue) \(c.entityType.rawValue) \(c.entityId) status=\(c.status.rawValue) attempts=\(c.attempts)")
        }
        lines.append("syncCursor (\(cursors.count))")
        for c in cursors { lines.append("  \(c.name)=\(c.value)") }
        return lines.joined(separator: "\n")
    }
}

extension GatewayDatabase {
    /// All rows, or those of one device (its outbox commands included).
    public func contents(serial: String? = nil) throws(StoreError) -> StoreContents {
        try read { db in
            var contents = StoreContents()
            let deviceFilter: SQLExpression? = try serial.map { serial in
                let id = try Int64.fetchOne(db, sql: "SELECT id FROM device WHERE serial = ?", arguments: [serial]) ?? -1
                return Column("deviceId") == id
            }
            func scoped<Record: TableRecord & FetchableRecord>(_ type: Record.Type, order: [any SQLOrderingTerm]) throws -> [Record] {
                var request = Record.all().order(order)
                if let deviceFilter { request = request.filter(deviceFilter) }
                return try request.fetchAll(db)
            }
            contents.devices = try DeviceRecord.filter(serial.map { DeviceRecord.Columns.serial == $0 } ?? true.sqlExpression).order(DeviceRecord.Columns.serial).fetchAll(db)
            contents.boots = try scoped(BootRecord.self, order: [BootRecord.Columns.deviceId, BootRecord.Columns.id])
            contents.anchors = try scoped(TimeAnchorRecord.self, order: [TimeAnchorRecord.Columns.deviceId, TimeAnchorRecord.Columns.bootCounter, TimeAnchorRecord.Columns.deviceMicroseconds])
            contents.events = try scoped(ConsumptionEventRecord.self, order: [ConsumptionEventRecord.Columns.deviceId, ConsumptionEventRecord.Columns.bootCounter, ConsumptionEventRecord.Columns.sequence])
            contents.telemetry = try scoped(DeviceTelemetryRecord.self, order: [DeviceTelemetryRecord.Columns.deviceId, DeviceTelemetryRecord.Columns.receivedAt, DeviceTelemetryRecord.Columns.kind])
            contents.settings = try scoped(DeviceSettingsRecord.self, order: [DeviceSettingsRecord.Columns.deviceId])
            var outbox = OutboxCommandRecord.order(OutboxCommandRecord.Columns.seq)
            if let serial {
                outbox = outbox.filter(OutboxCommandRecord.Columns.entityId == serial || OutboxCommandRecord.Columns.entityId.like("\(serial)/%"))
            }
            contents.outbox = try outbox.fetchAll(db)
            contents.cursors = serial == nil ? try SyncCursorRecord.order(SyncCursorRecord.Columns.name).fetchAll(db) : []
            return contents
        }
    }
}
