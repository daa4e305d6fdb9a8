import DBus
import Foundation

/// The test control surface: `io.tether.Simulator1` at `/io/tether/simulator`, on the simulator's connection.
///
/// Methods:
/// - `InjectFault(s kind, a{sv} options)`; `options["device"]` (o) picks one device, omitted means all:
///   - `disconnect`: the device drops the link now (remote reason).
///   - `random-disconnects` {`mean_interval_ms` u, 0 = off}: drops at random moments (per connection event).
///   - `drop-notifications` / `duplicate-notifications` {`probability` d}: per notification, seeded.
///   - `connect-failure` {`error` s: `abort` (Failed "le-connection-abort-by-local", default) or `in-progress`
///     (InProgress), `count` u (default 1)}: the next Connects fail.
///   - `acquire-notify-failure` {`error` s: `not-permitted` (NotPermitted "Notify acquired", default), `failed`
///     or `not-supported`, `count` u (default 1)}: the next AcquireNotify calls on TX fail.
///   - `agent-registration` {`delay_ms` u (default 0), `refuse` b (default false)}: every later
///     `AgentManager1.RegisterAgent` answers after the delay, and with Failed when `refuse` (until changed).
///   - `reboot`: the firmware power-cycles (boot counter + 1) and a live link drops.
///   - `adapter-power` {`powered` b}: links drop and discovery stops on power off.
///   - `bluetoothd-restart` {`downtime_ms` u, default 500; `late_no_reply_ms` u}: replies first, then restarts in
///     the background. Connect and Pair calls in flight get NoReply (dbus-daemon's answer for a callee that left),
///     at once, or `late_no_reply_ms` after the name is back (see `BlueZSimulator.restartBluetoothd`).
/// - `RecordHits(o device, u count) -> u recorded`: the user takes hits; the firmware sends them if connected.
/// - `Reboot(o device)`: same as the `reboot` fault.
/// - `StreamNotifications(o device, u count) -> u sent`: benchmark stream of `count` HIT_EVENT frames, one per
///   notification, bypassing the firmware (see `LinkModel.unthrottled`).
/// - Health devices (`devices[].health`), `InjectFault` kinds: `health-racp-disconnect` {`after_records` u}: the
///   next report drops the link after that many records; `health-racp-not-completed` {`after_records` u}: the next
///   report stops there with Procedure Not Completed; `health-racp-busy` {`count` u}: the next requests answered
///   Server Busy; `health-racp-in-progress` {`count` u}: the next RACP writes refused with ATT 0xFE;
///   `health-racp-abort-unsuccessful` {`enabled` b}; `health-racp-delete-unsupported` {`enabled` b}: Delete Stored
///   Records answered Op Code Not Supported; `health-special-values` {`value` s `nan`|`nres`|
///   `positiveInfinity`|`negativeInfinity`|`reserved`, `count` u}: the next measurements' main value;
///   `health-clock-not-set`: the device's clock is lost (counts from 2000-01-01); `health-sequence-reset`
///   {`first_sequence` u, default 1}: memory cleared, numbering restarts; `health-forget-bond`: the device was reset
///   and forgot its bond (a bonded Connect fails with Failed "le-connection-key-missing" until RemoveDevice + Pair);
///   `health-subscribe-failure` {`characteristic` q, `delay_ms` u, `count` u}: the next subscriptions (StartNotify
///   or AcquireNotify) of that characteristic wait `delay_ms`, then fail with Failed (a CCCD write that failed).
/// - `TakeMeasurement(o device, a{sv} options) -> b`: the person measures now (`user` y for cuffs and scales).
/// - `GetStatistics(o device) -> a{sv}`: `connected` b, `paired` b, `notifications_sent` u, `writes_received` u, `notifications_dropped` u,
///   `events_released` u (ACKed, forgotten by the firmware), `events_unacknowledged` u (still in flash),
///   `connect_calls` u, `disconnect_calls` u, `start_notify_calls` u (calls received, whatever their outcome),
///   `removals` u (RemoveDevice calls that removed it).
/// - `GetReleasedEvents(o device) -> a(qu)`: every event the firmware forgot after the gateway's ACK, as
///   (boot counter, event sequence as sent), in release order: what a durability check compares against the
///   gateway's and the server's databases (`scripts/durability/kill-loop.sh`).
enum SimulatorControl {
    static let path = DBusObjectPath("/io/tether/simulator")
    static let interfaceName = "io.tether.Simulator1"

    static func interface(_ simulator: BlueZSimulator) -> DBusInterface {
        DBusInterface(
            name: interfaceName,
            methods: [
                DBusMethod("InjectFault", inputs: [DBusArgument("kind", "s"), DBusArgument("options", "a{sv}")]) {
                    call in
                    let kind = call.arguments[0].stringValue ?? ""
                    let options = call.arguments[1].variantDictionaryValue ?? [:]
                    try await inject(kind, options: options, into: simulator)
                    return []
                },
                DBusMethod(
                    "RecordHits", inputs: [DBusArgument("device", "o"), DBusArgument("count", "u")],
                    outputs: [DBusArgument("recorded", "u")]
                ) { call in
                    let device = try await device(call.arguments[0].objectPathValue, in: simulator)
                    let recorded = await device.recordHits(Int(call.arguments[1].uint32Value ?? 0))
                    return [.uint32(UInt32(recorded))]
                },
                DBusMethod(
                    "StreamNotifications", inputs: [DBusArgument("device", "o"), DBusArgument("count", "u")],
                    outputs: [DBusArgument("sent", "u")], dispatch: .concurrent
                ) { call in
                    let device = try await device(call.arguments[0].objectPathValue, in: simulator)
                    let sent = await device.streamNotifications(Int(call.arguments[1].uint32Value ?? 0))
                    return [.uint32(UInt32(clamping: sent))]
                },
                DBusMethod(
                    "TakeMeasurement", inputs: [DBusArgument("device", "o"), DBusArgument("options", "a{sv}")],
                    outputs: [DBusArgument("taken", "b")]
                ) { call in
                    let device = try await device(call.arguments[0].objectPathValue, in: simulator)
                    let user = call.arguments[1].variantDictionaryValue?["user"]?.byteValue
                    return [.bool(await device.takeHealthMeasurement(user: user))]
                },
                DBusMethod("Reboot", inputs: [DBusArgument("device", "o")]) { call in
                    try await device(call.arguments[0].objectPathValue, in: simulator).reboot()
                    return []
                },
                DBusMethod(
                    "GetReleasedEvents", inputs: [DBusArgument("device", "o")],
                    outputs: [DBusArgument("events", "a(qu)")]
                ) { call in
                    let device = try await device(call.arguments[0].objectPathValue, in: simulator)
                    let events = await device.releasedEvents.map { event in
                        DBusValue.structure([.uint16(event.bootCounter), .uint32(event.eventSequence)])
                    }
                    return [.array(elementSignature: "(qu)", events)]
                },
                DBusMethod(
                    "GetStatistics", inputs: [DBusArgument("device", "o")],
                    outputs: [DBusArgument("statistics", "a{sv}")]
                ) { call in
                    let device = try await device(call.arguments[0].objectPathValue, in: simulator)
                    return [
                        .variantDictionary([
                            "connected": .bool(await device.isConnected),
                            "paired": .bool(await device.isPaired),
                            // What the device believes, and what the bus has: they differ only in a simulator bug.
                            "exported": .bool(await device.isExported),
                            "object_on_bus": .bool(simulator.connection.objectServer.exportedPaths.contains(device.path)),
                            "adapter_discovering": .bool(await simulator.adapter.isDiscovering),
                            "notifications_sent": .uint32(UInt32(clamping: await device.notificationsSent)),
                            "writes_received": .uint32(UInt32(clamping: await device.writesReceived)),
                            "notifications_dropped": .uint32(UInt32(clamping: await device.notificationsDropped)),
                            // The device's side of exactly-once: events forgotten after the gateway's ACK, and
                            // events still in flash waiting for one.
                            "events_released": .uint32(UInt32(clamping: await device.releasedEvents.count)),
                            "events_unacknowledged": .uint32(UInt32(clamping: await device.unacknowledgedEvents)),
                            "connect_calls": .uint32(UInt32(clamping: await device.connectCalls)),
                            "disconnect_calls": .uint32(UInt32(clamping: await device.disconnectCalls)),
                            "start_notify_calls": .uint32(UInt32(clamping: await device.startNotifyCalls)),
                            // A central subscribed to the Tether TX characteristic (StartNotify or AcquireNotify).
                            "tx_subscribed": .bool(await device.isNotifying(.tx) ? true : await device.isNotifyAcquired(.tx)),
                            "removals": .uint32(UInt32(clamping: await device.removals)),
                            // Health devices: values sent (notifications and indications) and records in memory.
                            "health_values_sent": .uint32(UInt32(clamping: await device.healthTransmissions.count)),
                            "health_records_stored": .uint32(UInt32(clamping: await device.healthRecordsStored)),
                        ])
                    ]
                },
            ])
    }

    private static func device(_ path: DBusObjectPath?, in simulator: BlueZSimulator) async throws
        -> SimulatedDevice
    {
        guard let path, let device = await simulator.device(at: path) else { throw BlueZError.doesNotExist }
        return device
    }

    private static func targets(_ options: [String: DBusValue], in simulator: BlueZSimulator) async throws
        -> [SimulatedDevice]
    {
        if let path = options["device"]?.objectPathValue {
            return [try await device(path, in: simulator)]
        }
        return simulator.devices
    }

    static func inject(_ kind: String, options: [String: DBusValue], into simulator: BlueZSimulator) async throws {
        switch kind {
        case "disconnect":
            for device in try await targets(options, in: simulator) { await device.remoteDisconnect() }
        case "random-disconnects":
            let mean = options["mean_interval_ms"]?.uint32Value ?? 0
            for device in try await targets(options, in: simulator) { await device.setRandomDisconnects(mean) }
        case "drop-notifications", "duplicate-notifications":
            guard let probability = options["probability"]?.doubleValue, (0...1).contains(probability) else {
                throw BlueZError.invalidArguments
            }
            for device in try await targets(options, in: simulator) {
                await device.setNotificationFault(drop: kind == "drop-notifications", probability: probability)
            }
        case "connect-failure":
            let error: DBusError
            switch options["error"]?.stringValue ?? "abort" {
            case "abort": error = BlueZError.connectionAbort
            case "in-progress": error = BlueZError.inProgress
            default: throw BlueZError.invalidArguments
            }
            let count = Int(options["count"]?.uint32Value ?? 1)
            for device in try await targets(options, in: simulator) {
                await device.failNextConnects(with: error, count: count)
            }
        case "acquire-notify-failure":
            let error: DBusError
            switch options["error"]?.stringValue ?? "not-permitted" {
            case "not-permitted": error = BlueZError.notPermitted("Notify acquired")
            case "failed": error = BlueZError.failed("AcquireNotify refused (fault)")
            case "not-supported": error = BlueZError.notSupported
            default: throw BlueZError.invalidArguments
            }
            let count = Int(options["count"]?.uint32Value ?? 1)
            for device in try await targets(options, in: simulator) {
                await device.failNextAcquireNotifies(with: error, count: count)
            }
        case "agent-registration":
            let delay = Duration.milliseconds(Int(options["delay_ms"]?.uint32Value ?? 0))
            let refuse = options["refuse"]?.boolValue ?? false
            await simulator.agents.setRegistrationFault(
                delay: delay, refusal: refuse ? BlueZError.failed("agent registration refused (fault)") : nil)
        case "reboot":
            for device in try await targets(options, in: simulator) { await device.reboot() }
        case "adapter-power":
            guard let powered = options["powered"]?.boolValue else { throw BlueZError.invalidArguments }
            await simulator.adapter.setPowered(powered)
        case "bluetoothd-restart":
            let downtime = Int(options["downtime_ms"]?.uint32Value ?? 500)
            let lateNoReply = options["late_no_reply_ms"]?.uint32Value.map { Duration.milliseconds(Int($0)) }
            Task {
                try? await Task.sleep(for: .milliseconds(20))
                try? await simulator.restartBluetoothd(downtime: .milliseconds(downtime), lateNoReply: lateNoReply)
            }
        case _ where kind.hasPrefix("health-"):
            for device in try await targets(options, in: simulator) where device.configuration.health != nil {
                try await device.injectHealthFault(String(kind.dropFirst("health-".count)), options: options)
            }
        default:
            throw BlueZError.invalidArguments
        }
    }
}

extension SimulatedDevice {
    func setRandomDisconnects(_ meanMilliseconds: UInt32) {
        randomDisconnectMeanMilliseconds = meanMilliseconds
    }

    func setNotificationFault(drop: Bool, probability: Double) {
        if drop { dropProbability = probability } else { duplicateProbability = probability }
    }
}
