/// A D-Bus object path such as `/org/bluez/hci0`.
///
/// Spec: a path starts with `/`, its elements are non-empty runs of `[A-Za-z0-9_]` separated by single `/`, and
/// only the root path `/` may end in `/`. Paths are validated before they reach libdbus (which aborts the process
/// on an invalid path), so an invalid literal surfaces as a thrown `.invalidArgs`, never a crash.
public struct DBusObjectPath: Hashable, Comparable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public static let root = DBusObjectPath("/")

    public var isValid: Bool {
        let bytes = Array(rawValue.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        var elementLength = 0
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                guard elementLength > 0 else { return false }
                elementLength = 0
            } else if Self.isElementCharacter(byte) {
                elementLength += 1
            } else {
                return false
            }
        }
        return elementLength > 0
    }

    private static func isElementCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    /// The path's elements: `/org/bluez` has `["org", "bluez"]`, the root has none.
    public var elements: [Substring] {
        rawValue.split(separator: "/", omittingEmptySubsequences: true)
    }

    /// This path with one more element (which must itself be a valid element for the result to be valid).
    public func appending(_ element: String) -> DBusObjectPath {
        DBusObjectPath(self == .root ? "/" + element : rawValue + "/" + element)
    }

    /// The enclosing path, or nil for the root.
    public var parent: DBusObjectPath? {
        guard self != .root else { return nil }
        let parentElements = elements.dropLast()
        return DBusObjectPath("/" + parentElements.joined(separator: "/"))
    }

    /// Whether `other` lies strictly below this path.
    public func isAncestor(of other: DBusObjectPath) -> Bool {
        guard self != other else { return false }
        if self == .root { return other.rawValue.hasPrefix("/") }
        return other.rawValue.hasPrefix(rawValue + "/")
    }

    /// Whether this path equals `namespace` or lies below it (the `path_namespace` match-rule test).
    public func isInNamespace(_ namespace: DBusObjectPath) -> Bool {
        self == namespace || namespace.isAncestor(of: self)
    }

    public static func < (lhs: DBusObjectPath, rhs: DBusObjectPath) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { rawValue }
}
