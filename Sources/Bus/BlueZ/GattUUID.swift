/// Bluetooth UUIDs as BlueZ spells them on D-Bus: 128-bit, lowercase (doc/gatt-api.txt, "UUID"). SIG-assigned
/// 16- and 32-bit UUIDs widen onto the Bluetooth Base UUID (Core Specification Vol 3 Part B §2.5.1), so a health
/// characteristic can be named `2A35`, `0x2A35` or in full.
public enum GattUUID {
    /// The Bluetooth Base UUID's tail after the first 32 bits.
    static let baseTail = "-0000-1000-8000-00805f9b34fb"

    /// The 128-bit lowercase form of `text` (`2A35`, `0x2A35`, `00002a35`, or a full UUID); nil for anything else.
    public static func normalized(_ text: String) -> String? {
        var hex = text.lowercased()
        if hex.hasPrefix("0x") { hex.removeFirst(2) }
        let isHex = { (part: Substring) in part.allSatisfy { $0.isHexDigit && $0.isASCII } }
        switch hex.count {
        case 4 where isHex(hex[...]): return "0000" + hex + baseTail
        case 8 where isHex(hex[...]): return hex + baseTail
        case 36:
            let groups = hex.split(separator: "-", omittingEmptySubsequences: false)
            guard groups.map(\.count) == [8, 4, 4, 4, 12], groups.allSatisfy(isHex) else { return nil }
            return hex
        default: return nil
        }
    }

    /// The 16-bit SIG-assigned number of a UUID on the Base UUID (`0x2A35`), nil for a vendor UUID.
    public static func assignedNumber(_ uuid: String) -> UInt16? {
        guard let full = normalized(uuid), full.hasSuffix(baseTail), full.hasPrefix("0000") else { return nil }
        return UInt16(full.dropFirst(4).prefix(4), radix: 16)
    }
}
