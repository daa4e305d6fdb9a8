/// One D-Bus value of any type in the D-Bus type system.
///
/// Containers carry the signatures of their contents, so an empty array or dictionary still marshals with the
/// right type (`.array(elementSignature: "s", [])` is `as`, not something guessed from zero elements).
/// Dictionaries are ordered lists of entries: D-Bus keeps wire order, and keys need not be `Hashable` here.
public indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    /// A Unix file descriptor (`h`). Received descriptors are owned by the value; sending duplicates them.
    case unixFD(OwnedFileDescriptor)
    /// An array `a<elementSignature>`; every element must have exactly that signature.
    case array(elementSignature: DBusSignature, [DBusValue])
    /// A dictionary `a{<keySignature><valueSignature>}`; keys must be of a basic type.
    case dictionary(keySignature: DBusSignature, valueSignature: DBusSignature, [DBusDictionaryEntry])
    /// A struct `(...)` with at least one field.
    case structure([DBusValue])
    /// A variant `v`: a value that carries its own signature.
    case variant(DBusValue)
}

/// One key/value pair of a D-Bus dictionary.
public struct DBusDictionaryEntry: Hashable, Sendable {
    public var key: DBusValue
    public var value: DBusValue

    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

// MARK: - Building common shapes

extension DBusValue {
    /// `ay` from bytes.
    public static func bytes(_ bytes: some Sequence<UInt8>) -> DBusValue {
        .array(elementSignature: "y", bytes.map { .byte($0) })
    }

    /// `as` from strings.
    public static func strings(_ strings: some Sequence<String>) -> DBusValue {
        .array(elementSignature: "s", strings.map { .string($0) })
    }

    /// `ao` from object paths.
    public static func objectPaths(_ paths: some Sequence<DBusObjectPath>) -> DBusValue {
        .array(elementSignature: "o", paths.map { .objectPath($0) })
    }

    /// `a{sv}` from a Swift dictionary, each value wrapped in a variant, in key order (for stable output).
    public static func variantDictionary(_ dictionary: [String: DBusValue]) -> DBusValue {
        .dictionary(
            keySignature: "s",
            valueSignature: "v",
            dictionary.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(key: .string($0.key), value: .variant($0.value)) }
        )
    }
}

// MARK: - Reading values

extension DBusValue {
    public var byteValue: UInt8? { if case .byte(let v) = self { v } else { nil } }
    public var boolValue: Bool? { if case .bool(let v) = self { v } else { nil } }
    public var int16Value: Int16? { if case .int16(let v) = self { v } else { nil } }
    public var uint16Value: UInt16? { if case .uint16(let v) = self { v } else { nil } }
    public var int32Value: Int32? { if case .int32(let v) = self { v } else { nil } }
    public var uint32Value: UInt32? { if case .uint32(let v) = self { v } else { nil } }
    public var int64Value: Int64? { if case .int64(let v) = self { v } else { nil } }
    public var uint64Value: UInt64? { if case .uint64(let v) = self { v } else { nil } }
    public var doubleValue: Double? { if case .double(let v) = self { v } else { nil } }
    public var stringValue: String? { if case .string(let v) = self { v } else { nil } }
    public var objectPathValue: DBusObjectPath? { if case .objectPath(let v) = self { v } else { nil } }
    public var signatureValue: DBusSignature? { if case .signature(let v) = self { v } else { nil } }
    public var fileDescriptorValue: OwnedFileDescriptor? { if case .unixFD(let v) = self { v } else { nil } }
    public var arrayElements: [DBusValue]? { if case .array(_, let v) = self { v } else { nil } }
    public var dictionaryEntries: [DBusDictionaryEntry]? { if case .dictionary(_, _, let v) = self { v } else { nil } }
    public var structureFields: [DBusValue]? { if case .structure(let v) = self { v } else { nil } }

    /// The value inside a variant, or nil if this is not a variant.
    public var variantValue: DBusValue? { if case .variant(let v) = self { v } else { nil } }

    /// This value with any number of variant wrappers removed.
    public var unwrappingVariants: DBusValue {
        var value = self
        while case .variant(let inner) = value { value = inner }
        return value
    }

    /// The bytes of an `ay`.
    public var bytesValue: [UInt8]? {
        guard case .array("y", let elements) = self else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(elements.count)
        for element in elements {
            guard case .byte(let byte) = element else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// The strings of an `as`.
    public var stringsValue: [String]? {
        guard case .array("s", let elements) = self else { return nil }
        var strings: [String] = []
        for element in elements {
            guard case .string(let string) = element else { return nil }
            strings.append(string)
        }
        return strings
    }

    /// An `a{sv}` as a Swift dictionary with the variants unwrapped (a later duplicate key wins).
    public var variantDictionaryValue: [String: DBusValue]? {
        guard case .dictionary("s", "v", let entries) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard case .string(let key) = entry.key, case .variant(let value) = entry.value else { return nil }
            result[key] = value
        }
        return result
    }
}
