/// The type signature of a value and the checks that make it safe to hand to libdbus.
///
/// libdbus treats a malformed value (an array element of the wrong type, an invalid object path, nesting too
/// deep) as a programming error and aborts the process. Every value is therefore checked here first and a
/// violation is thrown as `.invalidArgs` / `.invalidSignature`.
extension DBusValue {
    /// The D-Bus signature of this value (one complete type).
    public var signature: DBusSignature {
        DBusSignature(signatureText)
    }

    private var signatureText: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element.rawValue
        case .dictionary(let key, let value, _): "a{" + key.rawValue + value.rawValue + "}"
        case .structure(let fields): "(" + fields.map(\.signatureText).joined() + ")"
        case .variant: "v"
        }
    }

    /// Whether this value contains a Unix file descriptor anywhere.
    var containsUnixFD: Bool {
        switch self {
        case .unixFD: true
        case .array(_, let elements), .structure(let elements): elements.contains { $0.containsUnixFD }
        case .dictionary(_, _, let entries): entries.contains { $0.key.containsUnixFD || $0.value.containsUnixFD }
        case .variant(let inner): inner.containsUnixFD
        default: false
        }
    }

    /// Throws unless libdbus can marshal this value without tripping one of its fatal checks.
    public func validateForWire() throws {
        try validate(depth: NestingDepth())
    }

    /// Spec: arrays and structs (dict entries count as structs) may each nest 32 deep; with variants the total
    /// container depth may not exceed 64.
    private struct NestingDepth {
        static let maximumPerKind = 32
        static let maximumTotal = 64

        var arrays = 0
        var structs = 0
        var total = 0

        func entering(array: Bool = false, structure: Bool = false) throws -> NestingDepth {
            var next = self
            next.arrays += array ? 1 : 0
            next.structs += structure ? 1 : 0
            next.total += 1
            guard next.arrays <= Self.maximumPerKind, next.structs <= Self.maximumPerKind,
                next.total <= Self.maximumTotal
            else {
                throw DBusError(.invalidArgs, "Value nests containers deeper than D-Bus allows")
            }
            return next
        }
    }

    private func validate(depth: NestingDepth) throws {
        switch self {
        case .byte, .bool, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double:
            return
        case .string(let string):
            guard !string.utf8.contains(0) else {
                throw DBusError(.invalidArgs, "D-Bus strings cannot contain NUL characters")
            }
        case .objectPath(let path):
            guard path.isValid else {
                throw DBusError(.invalidArgs, "Invalid object path '\(path.rawValue)'")
            }
        case .signature(let signature):
            guard signature.isValid else {
                throw DBusError(.invalidSignature, "Invalid signature '\(signature.rawValue)'")
            }
        case .unixFD(let descriptor):
            guard descriptor.rawValue != nil else {
                throw DBusError(.invalidArgs, "Cannot send a file descriptor that was already closed or taken")
            }
        case .array(let elementSignature, let elements):
            guard elementSignature.isSingleCompleteType else {
                throw DBusError(
                    .invalidSignature,
                    "Array element signature '\(elementSignature.rawValue)' is not a single complete type"
                )
            }
            let inner = try depth.entering(array: true)
            for element in elements {
                try element.requireSignature(elementSignature, role: "array element")
                try element.validate(depth: inner)
            }
        case .dictionary(let keySignature, let valueSignature, let entries):
            guard keySignature.isBasicType else {
                throw DBusError(.invalidSignature, "Dictionary key signature '\(keySignature.rawValue)' is not a basic type")
            }
            guard valueSignature.isSingleCompleteType else {
                throw DBusError(
                    .invalidSignature,
                    "Dictionary value signature '\(valueSignature.rawValue)' is not a single complete type"
                )
            }
            let inner = try depth.entering(array: true).entering(structure: true)
            for entry in entries {
                try entry.key.requireSignature(keySignature, role: "dictionary key")
                try entry.value.requireSignature(valueSignature, role: "dictionary value")
                try entry.key.validate(depth: inner)
                try entry.value.validate(depth: inner)
            }
        case .structure(let fields):
            guard !fields.isEmpty else {
                throw DBusError(.invalidArgs, "D-Bus structs must have at least one field")
            }
            let inner = try depth.entering(structure: true)
            for field in fields {
                try field.validate(depth: inner)
            }
        case .variant(let inner):
            try inner.validate(depth: try depth.entering())
        }
        if case .structure = self, !signature.isSingleCompleteType {
            throw DBusError(.invalidSignature, "Struct signature '\(signature.rawValue)' is invalid")
        }
    }

    private func requireSignature(_ expected: DBusSignature, role: String) throws {
        let actual = signature
        guard actual == expected else {
            throw DBusError(
                .invalidArgs,
                "The \(role) has signature '\(actual.rawValue)' but '\(expected.rawValue)' was declared"
            )
        }
    }
}

extension DBusValue: CustomStringConvertible {
    /// A GVariant-like rendering for logs and test failures, e.g. `int16 5` or `{'a': <uint32 1>}`.
    public var description: String {
        switch self {
        case .byte(let v): "byte \(v)"
        case .bool(let v): "\(v)"
        case .int16(let v): "int16 \(v)"
        case .uint16(let v): "uint16 \(v)"
        case .int32(let v): "\(v)"
        case .uint32(let v): "uint32 \(v)"
        case .int64(let v): "int64 \(v)"
        case .uint64(let v): "uint64 \(v)"
        case .double(let v): "\(v)"
        case .string(let v): v.debugDescription
        case .objectPath(let v): "objectpath '\(v.rawValue)'"
        case .signature(let v): "signature '\(v.rawValue)'"
        case .unixFD(let v): "handle \(v)"
        case .array(let element, let elements):
            elements.isEmpty ? "@a\(element.rawValue) []" : "[" + elements.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let key, let value, let entries):
            entries.isEmpty
                ? "@a{\(key.rawValue)\(value.rawValue)} {}"
                : "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .structure(let fields): "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case .variant(let inner): "<\(inner)>"
        }
    }
}
