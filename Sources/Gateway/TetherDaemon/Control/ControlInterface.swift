import ControlContract
import DBus

/// io.tether.Gateway1 as a `DBusInterface`: names, signatures and handlers exactly as docs/specs/control-api.md lists
/// them. Arguments arrive already checked against the input signature by the object server.
enum ControlInterface {
    static let name = GatewayContract.interface
    static let busName = GatewayContract.busName
    static let path = GatewayContract.objectPath

    static func make(_ control: GatewayControl, connection: DBusConnection) -> DBusInterface {
        DBusInterface(
            name: name,
            methods: [
                DBusMethod(GatewayMethod.getStatus.rawValue, outputs: [DBusArgument("status", "a{sv}")]) { _ in [try await control.getStatus()] },
                DBusMethod(GatewayMethod.listDevices.rawValue, outputs: [DBusArgument("devices", "aa{sv}")]) { _ in [try await control.listDevices()] },
                DBusMethod(GatewayMethod.getDevice.rawValue, inputs: [DBusArgument("device", "s")], outputs: [DBusArgument("device", "a{sv}")]) { call in
                    [try await control.getDevice(try string(call, 0))]
                },
                DBusMethod(GatewayMethod.startScan.rawValue) { _ in
                    try await control.startScan()
                    return []
                },
                DBusMethod(GatewayMethod.stopScan.rawValue) { _ in
                    try await control.stopScan()
                    return []
                },
                DBusMethod(GatewayMethod.listScanResults.rawValue, outputs: [DBusArgument("results", "aa{sv}")]) { _ in [try await control.listScanResults()] },
                DBusMethod(
                    GatewayMethod.pair.rawValue, inputs: [DBusArgument("address", "s"), DBusArgument("prompt", "o")],
                    outputs: [DBusArgument("device", "a{sv}")]
                ) { call in
                    guard let path = call.arguments[1].objectPathValue else { throw ControlError.invalidArgument("prompt must be an object path") }
                    let prompt = PairingPromptClient(connection: connection, caller: call.sender, path: path)
                    return [try await control.pair(address: try string(call, 0), prompt: prompt)]
                },
                DBusMethod(GatewayMethod.forget.rawValue, inputs: [DBusArgument("device", "s")]) { call in
                    try await control.forget(try string(call, 0))
                    return []
                },
                DBusMethod(GatewayMethod.getSettings.rawValue, inputs: [DBusArgument("serial", "s")], outputs: [DBusArgument("settings", "a{sv}")]) { call in
                    [try control.getSettings(try string(call, 0))]
                },
                DBusMethod(
                    GatewayMethod.setSettings.rawValue, inputs: [DBusArgument("serial", "s"), DBusArgument("desired", "a{sv}")],
                    outputs: [DBusArgument("settings", "a{sv}")]
                ) { call in
                    guard let desired = call.arguments[1].variantDictionaryValue else {
                        throw ControlError.invalidArgument("desired must be a{sv}")
                    }
                    return [try await control.setSettings(try string(call, 0), desired)]
                },
                DBusMethod(
                    GatewayMethod.listOutbox.rawValue, inputs: [DBusArgument("status", "s"), DBusArgument("limit", "u")],
                    outputs: [DBusArgument("commands", "aa{sv}")]
                ) { call in
                    [try control.listOutbox(status: try string(call, 0), limit: call.arguments[1].uint32Value ?? 0)]
                },
                DBusMethod(GatewayMethod.listDeadLetters.rawValue, inputs: [DBusArgument("limit", "u")], outputs: [DBusArgument("commands", "aa{sv}")]) { call in
                    [try control.listDeadLetters(limit: call.arguments[0].uint32Value ?? 0)]
                },
                DBusMethod(GatewayMethod.retryDeadLetter.rawValue, inputs: [DBusArgument("id", "s")], outputs: [DBusArgument("count", "u")]) { call in
                    [.uint32(try control.retryDeadLetter(try string(call, 0)))]
                },
                DBusMethod(GatewayMethod.discardDeadLetter.rawValue, inputs: [DBusArgument("id", "s")], outputs: [DBusArgument("count", "u")]) { call in
                    [.uint32(try control.discardDeadLetter(try string(call, 0)))]
                },
                DBusMethod(GatewayMethod.listConflicts.rawValue, outputs: [DBusArgument("conflicts", "aa{sv}")]) { _ in [try control.listConflicts()] },
                DBusMethod(
                    GatewayMethod.resolveConflict.rawValue, inputs: [DBusArgument("serial", "s"), DBusArgument("key", "y"), DBusArgument("keep", "s")]
                ) { call in
                    guard let key = call.arguments[1].byteValue else { throw ControlError.invalidArgument("key must be a byte") }
                    try await control.resolveConflict(serial: try string(call, 0), key: key, keep: try string(call, 2))
                    return []
                },
                DBusMethod(GatewayMethod.syncNow.rawValue) { _ in
                    try await control.syncNow()
                    return []
                },
                DBusMethod(GatewayMethod.listHealthDevices.rawValue, outputs: [DBusArgument("devices", "aa{sv}")]) { _ in
                    [try await control.listHealthDevices()]
                },
                DBusMethod(
                    GatewayMethod.listHealthSamples.rawValue,
                    inputs: [DBusArgument("device", "s"), DBusArgument("query", "a{sv}")],
                    outputs: [DBusArgument("samples", "aa{sv}")]
                ) { call in
                    [try control.listHealthSamples(device: try string(call, 0), query: try dictionary(call, 1))]
                },
                DBusMethod(
                    GatewayMethod.deleteHealthSample.rawValue, inputs: [DBusArgument("uid", "s"), DBusArgument("note", "s")],
                    outputs: [DBusArgument("deletion", "a{sv}")]
                ) { call in
                    [try await control.deleteHealthSample(uid: try string(call, 0), note: try string(call, 1))]
                },
                DBusMethod(
                    GatewayMethod.correctHealthSample.rawValue,
                    inputs: [DBusArgument("uid", "s"), DBusArgument("correction", "a{sv}"), DBusArgument("note", "s")],
                    outputs: [DBusArgument("deletion", "a{sv}")]
                ) { call in
                    [try await control.correctHealthSample(uid: try string(call, 0), correction: try dictionary(call, 1), note: try string(call, 2))]
                },
                DBusMethod(
                    GatewayMethod.listHealthDeletions.rawValue, inputs: [DBusArgument("device", "s"), DBusArgument("limit", "u")],
                    outputs: [DBusArgument("deletions", "aa{sv}")]
                ) { call in
                    [try control.listHealthDeletions(device: try string(call, 0), limit: call.arguments[1].uint32Value ?? 0)]
                },
                DBusMethod(GatewayMethod.backfill.rawValue, inputs: [DBusArgument("device", "s")], outputs: [DBusArgument("results", "aa{sv}")]) { call in
                    [try await control.backfill(try string(call, 0))]
                },
                DBusMethod(
                    GatewayMethod.listHealthProjections.rawValue, inputs: [DBusArgument("device", "s")], outputs: [DBusArgument("projections", "aa{sv}")]
                ) { call in
                    [try control.listHealthProjections(device: try string(call, 0))]
                },
                DBusMethod(
                    GatewayMethod.updateFirmware.rawValue,
                    inputs: [DBusArgument("device", "s"), DBusArgument("image", "h"), DBusArgument("options", "a{sv}")],
                    outputs: [DBusArgument("update", "a{sv}")]
                ) { call in
                    guard call.arguments.count > 1, let image = call.arguments[1].fileDescriptorValue else {
                        throw ControlError.invalidArgument("image must be a file descriptor")
                    }
                    defer { image.close() }
                    return [try await control.updateFirmware(device: try string(call, 0), image: image, options: try dictionary(call, 2))]
                },
                DBusMethod(
                    GatewayMethod.listFirmwareUpdates.rawValue, inputs: [DBusArgument("device", "s"), DBusArgument("limit", "u")],
                    outputs: [DBusArgument("updates", "aa{sv}")]
                ) { call in
                    [try control.listFirmwareUpdates(device: try string(call, 0), limit: call.arguments[1].uint32Value ?? 0)]
                },
                DBusMethod(
                    GatewayMethod.firmwareCommand.rawValue,
                    inputs: [DBusArgument("device", "s"), DBusArgument("command", "s"), DBusArgument("arguments", "a{sv}")],
                    outputs: [DBusArgument("slots", "aa{sv}")]
                ) { call in
                    [try await control.firmwareCommand(device: try string(call, 0), command: try string(call, 1), arguments: try dictionary(call, 2))]
                },
            ],
            signals: [
                DBusSignalDeclaration("DeviceChanged", arguments: [DBusArgument("device", "a{sv}")]),
                DBusSignalDeclaration("ScanResult", arguments: [DBusArgument("result", "a{sv}")]),
                DBusSignalDeclaration("SyncFinished", arguments: [DBusArgument("summary", "a{sv}")]),
                DBusSignalDeclaration("HealthReading", arguments: [DBusArgument("reading", "a{sv}")]),
                DBusSignalDeclaration("FirmwareProgress", arguments: [DBusArgument("progress", "a{sv}")]),
                DBusSignalDeclaration("FirmwareUpdateFinished", arguments: [DBusArgument("update", "a{sv}")]),
            ])
    }

    private static func dictionary(_ call: DBusMethodCall, _ index: Int) throws(DBusError) -> [String: DBusValue] {
        guard index < call.arguments.count, let value = call.arguments[index].variantDictionaryValue else {
            throw ControlError.invalidArgument("argument \(index + 1) of \(call.member) must be a{sv}")
        }
        return value
    }

    private static func string(_ call: DBusMethodCall, _ index: Int) throws(DBusError) -> String {
        guard index < call.arguments.count, let value = call.arguments[index].stringValue else {
            throw ControlError.invalidArgument("argument \(index + 1) of \(call.member) must be a string")
        }
        return value
    }
}
