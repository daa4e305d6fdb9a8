import DBus

/// How bluetoothd hands a GATT application's characteristic the central's Write Commands (doc/gatt-api.txt, "GATT
/// Characteristic hierarchy", server side): `WriteValue` calls, each with the link's MTU in its options; or, for a
/// characteristic with a `WriteAcquired` property, a socket asked for with `AcquireWrite` at the first Write Command,
/// through which every later one comes as one packet, in order. Method calls would not keep that order: the DBus
/// module runs each handler as its own task.
enum WriteCommandMethods {
    /// `write` takes one value with bluetoothd's "mtu" option (absent before BlueZ 5.62); `acquire` makes the socket
    /// pair and returns bluetoothd's end.
    static func make(
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
}
