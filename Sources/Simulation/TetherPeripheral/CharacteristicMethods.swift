import DBus

/// The GattCharacteristic1 methods a GATT application's characteristic offers bluetoothd (doc/gatt-api.txt, "GATT
/// Characteristic hierarchy", server side), shared by the peripheral's characteristics.
enum CharacteristicMethods {
    /// The central's Write Commands: `WriteValue` calls, each with the link's MTU in its options; or, for a
    /// characteristic with a `WriteAcquired` property, a socket asked for with `AcquireWrite` at the first Write
    /// Command, through which every later one comes as one packet, in order. Method calls would not keep that order:
    /// the DBus module runs each handler as its own task. `write` takes one value with bluetoothd's "mtu" option
    /// (absent before BlueZ 5.62); `acquire` makes the socket pair and returns bluetoothd's end.
    static func writeCommands(
        write: @escaping @Sendable ([UInt8], Int?) async -> Void, acquire: @escaping @Sendable (Int?) async throws -> OwnedFileDescriptor
    ) -> [DBusMethod] {
        [
            DBusMethod("WriteValue", inputs: [DBusArgument("value", "ay"), DBusArgument("options", "a{sv}")]) { call in
                let options = call.arguments[1].variantDictionaryValue ?? [:]
                await write(call.arguments[0].bytesValue ?? [], options["mtu"]?.unwrappingVariants.uint16Value.map(Int.init))
                return []
            },
            DBusMethod("AcquireWrite", inputs: [DBusArgument("options", "a{sv}")], outputs: [DBusArgument("fd", "h"), DBusArgument("mtu", "q")]) { call in
                let options = call.arguments[0].variantDictionaryValue ?? [:]
                let mtu = options["mtu"]?.unwrappingVariants.uint16Value
                let descriptor = try await acquire(mtu.map(Int.init))
                return [.unixFD(descriptor), .uint16(mtu ?? 23)]
            },
        ]
    }

    /// Notifications: `StartNotify`/`StopNotify` when the central writes the CCCD (bluetoothd then turns each `Value`
    /// PropertiesChanged into one notification), and `ReadValue` answering the last value sent.
    static func notifications(
        read: @escaping @Sendable () async -> [UInt8], start: @escaping @Sendable () async -> Void, stop: @escaping @Sendable () async -> Void
    ) -> [DBusMethod] {
        [
            DBusMethod("ReadValue", inputs: [DBusArgument("options", "a{sv}")], outputs: [DBusArgument("value", "ay")]) { _ in
                [.bytes(await read())]
            },
            DBusMethod("StartNotify") { _ in
                await start()
                return []
            },
            DBusMethod("StopNotify") { _ in
                await stop()
                return []
            },
        ]
    }
}
