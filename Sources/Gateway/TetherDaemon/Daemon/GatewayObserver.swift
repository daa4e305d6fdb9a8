import Logging
import ServiceLifecycle
import TetherGateway
import TetherSync

/// Turns what the gateway and the sync engine report into signals, metrics and sync triggers:
/// device changes → `DeviceChanged`, frame and event counters and the connected-devices gauge (sync is triggered by
/// the group committer's commits, in TetherDaemon); scan results → `ScanResult`; finished syncs → `SyncFinished` and the
/// sync counters. Settings from the backend reach connected devices: after a sync that applied changes, and
/// for a device seen for the first time since start (its settings are fetched once, docs/design/sync.md).
struct GatewayObserver: Service {
    let gateway: Gateway?
    let sync: SyncService<ContinuousClock>?
    let hub: SignalHub
    let metrics: DaemonMetrics
    let logger: Logger

    func run() async throws {
        let deviceChanges = await gateway?.changes()
        let scanEvents = await gateway?.scanEvents()
        let syncEvents = sync?.finishedEvents()
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                if let deviceChanges { group.addTask { await observeDevices(deviceChanges) } }
                if let scanEvents {
                    group.addTask { for await result in scanEvents { hub.current?.scanResult(result) } }
                }
                if let syncEvents { group.addTask { await observeSync(syncEvents) } }
            }
        }
    }

    private func observeDevices(_ changes: AsyncStream<GatewayDevice>) async {
        var last: [String: GatewayDevice] = [:]
        for await device in changes {
            let previous = last[device.address]
            last[device.address] = device
            metrics.framesReceived.increment(by: Int(clamping: device.framesReceived &- (previous?.framesReceived ?? 0)))
            metrics.framesSent.increment(by: Int(clamping: device.framesSent &- (previous?.framesSent ?? 0)))
            if previous?.state != device.state {
                metrics.devicesConnected.record(last.values.count { $0.state == .connected })
                if device.state == .connected { metrics.connectionAttempt(result: "connected") }
                if device.state == .backoff { metrics.connectionAttempt(result: "failed") }
                logger.info("device \(device.state.rawValue)", metadata: [
                    "address": "\(device.address)", "serial": "\(device.serial ?? "-")",
                    "last_error": "\(device.lastError ?? "-")",
                ])
            }
            if previous?.serial == nil, let serial = device.serial, let sync, let gateway {
                Task {
                    do {
                        if try await sync.engine.refreshSettings(serial: serial) { try? await gateway.desiredSettingsChanged(serial: serial) }
                    } catch {
                        logger.info("could not fetch the backend's settings for a device", metadata: ["serial": "\(serial)", "error": "\(error)"])
                    }
                }
            }
            if let previous, device.eventsStored > previous.eventsStored {
                metrics.eventsCommitted.increment(by: Int(clamping: device.eventsStored - previous.eventsStored))
            }
            hub.current?.deviceChanged(ControlRecords.device(gateway: device, record: nil, eventsStored: nil))
        }
    }

    private func observeSync(_ events: AsyncStream<SyncFinished>) async {
        for await finished in events {
            let report = finished.report
            metrics.syncFinished(result: report.succeeded ? "ok" : "failed", pushed: report.push.commandsSent)
            metrics.healthUploaded(report.health)
            if let failure = report.failure {
                logger.warning("sync failed", metadata: ["error": "\(failure)", "trigger": "\(report.trigger.rawValue)"])
            } else {
                logger.info("sync finished", metadata: [
                    "pushed": "\(report.push.commandsSent)", "pulled": "\(report.pull.changes)", "trigger": "\(report.trigger.rawValue)",
                ])
            }
            if report.pull.applied > 0, let gateway {
                // The feed may have changed desired settings: the gateway sends them to connected devices.
                for device in await gateway.devices() {
                    if let serial = device.serial { try? await gateway.desiredSettingsChanged(serial: serial) }
                }
            }
            hub.current?.syncFinished(finished)
        }
    }
}
