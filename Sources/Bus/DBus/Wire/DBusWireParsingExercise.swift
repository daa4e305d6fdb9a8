/// Every reading path of `DBusWireConnection` run over untrusted bytes, the way the connection runs them: framing
/// a stream into messages, parsing each header, matching a rule, decoding the whole body, and the selective reads
/// a notification collector does. It exists for the libFuzzer target `Fuzz/Sources/DBusWireFuzzer`: a thrown
/// `WireFormatError` is the right answer to bad bytes; a trap (out-of-bounds read, overflow) is a bug.
public enum DBusWireParsingExercise {
    private static let notificationRule = try! WireMatch(
        DBusMatchRule(
            sender: "org.bluez", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [0: "org.bluez.GattCharacteristic1"]))

    /// Reads `bytes` as a stream of messages; returns how many parsed. Stops at the first framing error, as the
    /// connection does (there is no way to find the next message).
    @discardableResult
    public static func run(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        var parsed = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            guard let length = try? WireMessageView.length(ofMessageStartingWith: rest), length <= rest.count else {
                break
            }
            precondition(length >= 16, "a framed message shorter than its fixed header")
            offset += length
            guard let message = try? WireMessageView(parsing: UnsafeRawBufferPointer(rebasing: rest[0..<length]))
            else { continue }
            parsed += 1
            _ = notificationRule.matches(message)
            _ = try? message.arguments()
            let signal = DBusWireSignal(message: message)
            _ = signal.hasSignature("sa{sv}as")
            var body = signal.body
            _ = try? body.readString(equals: "org.bluez.GattCharacteristic1")
            try? body.readVariantDictionary { key, variant in
                if variant.holdsBytes {
                    let value = try variant.readBytes()
                    precondition(value.count <= length, "a value longer than its message")
                } else if variant.holds("b") {
                    _ = try variant.readBool()
                } else if DBusWireReader.bytes(key, equal: "All") {
                    _ = try variant.readValue()
                }
            }
        }
        return parsed
    }
}
