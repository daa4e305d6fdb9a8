import DBus

/// The device's side of passkey pairing: an `org.bluez.Agent1` (KeyboardOnly, or DisplayOnly with `showsPasskey`) that enters a fixed
/// passkey (a device with a printed code). With the central's agent also KeyboardOnly, SMP picks Passkey Entry
/// with both sides entering the same number, so the pairing succeeds only if the technician types that code.
struct PasskeyAgent: Sendable {
    let path: DBusObjectPath
    let passkey: UInt32

    func interface(log: EventLog) -> DBusInterface {
        let passkey = passkey
        return DBusInterface(
            name: BlueZName.agent,
            methods: [
                DBusMethod("RequestPasskey", inputs: [DBusArgument("device", "o")], outputs: [DBusArgument("passkey", "u")]) { call in
                    log.note("agent-request-passkey", ["device": call.arguments.first?.objectPathValue?.rawValue ?? "?"])
                    return [.uint32(passkey)]
                },
                DBusMethod("DisplayPasskey", inputs: [DBusArgument("device", "o"), DBusArgument("passkey", "u"), DBusArgument("entered", "q")]) { call in
                    log.note("agent-display-passkey", ["passkey": Int(call.arguments[1].uint32Value ?? 0)])
                    return []
                },
                DBusMethod("RequestConfirmation", inputs: [DBusArgument("device", "o"), DBusArgument("passkey", "u")]) { call in
                    // Numeric comparison would mean the central offered DisplayYesNo: this device cannot compare.
                    log.note("agent-confirmation-rejected", ["passkey": Int(call.arguments[1].uint32Value ?? 0)])
                    throw DBusError(name: "org.bluez.Error.Rejected", message: "this device only takes a passkey")
                },
                DBusMethod("RequestAuthorization", inputs: [DBusArgument("device", "o")]) { _ in
                    log.note("agent-authorization-rejected")
                    throw DBusError(name: "org.bluez.Error.Rejected", message: "pairing needs the passkey")
                },
                DBusMethod("AuthorizeService", inputs: [DBusArgument("device", "o"), DBusArgument("uuid", "s")]) { _ in [] },
                DBusMethod("Cancel") { _ in
                    log.note("agent-cancel")
                    return []
                },
                DBusMethod("Release") { _ in [] },
            ])
    }
}
