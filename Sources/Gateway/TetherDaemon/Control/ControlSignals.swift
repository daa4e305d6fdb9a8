import ControlContract
import DBus
import TetherGateway
import TetherSync

/// Emits the control API's signals (docs/specs/control-api.md, "Signals"). `DeviceChanged` needs no limiter here: the
/// gateway's `changes()` already yields a device at most once per 250 ms (4 per second), the latest state last.
public struct ControlSignals: Sendable {
    let connection: DBusConnection

    func deviceChanged(_ device: DBusValue) { emit(GatewaySignal.deviceChanged.rawValue, device) }
    func scanResult(_ result: ScanResult) { emit(GatewaySignal.scanResult.rawValue, ControlRecords.scanResult(result)) }
    func syncFinished(_ finished: SyncFinished) { emit(GatewaySignal.syncFinished.rawValue, ControlRecords.syncFinished(finished)) }
    func healthReading(_ reading: HealthLiveReading) { emit(GatewaySignal.healthReading.rawValue, ControlRecords.healthReading(reading)) }

    func firmwareProgress(_ progress: DBusValue) { emit(GatewaySignal.firmwareProgress.rawValue, progress) }
    func firmwareUpdateFinished(_ update: DBusValue) { emit(GatewaySignal.firmwareUpdateFinished.rawValue, update) }

    private func emit(_ member: String, _ value: DBusValue) {
        // A signal that cannot be sent (the bus is going away) is not worth failing anything for.
        try? connection.emitSignal(path: ControlInterface.path, interface: ControlInterface.name, member: member, arguments: [value])
    }
}
