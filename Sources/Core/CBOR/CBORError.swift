/// Why a byte sequence is not one acceptable CBOR data item, and where (the offset of the byte that broke the rule,
/// from the start of the decoded bytes). Equal by code and offset.
public struct CBORError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The item continues past the end of the bytes. A streaming caller reads this as "need more bytes"
        /// (`CBORDecoder.decodePrefix` returns nil for it); a caller that has the whole item treats it as bad bytes.
        case truncated
        /// Additional information 28, 29 or 30 (RFC 8949 §3: reserved, not well-formed).
        case reservedAdditionalInfo
        /// Additional information 31 on major type 0, 1 or 6 (RFC 8949 §3.2.4), or a break (0xff) outside an
        /// indefinite-length item (§3.2.1).
        case unexpectedIndefiniteOrBreak
        /// A chunk of an indefinite-length string that is not a definite string of the same major type (§3.2.3).
        case invalidChunk
        /// A text string that is not valid UTF-8 (§3.1, major type 3).
        case invalidUTF8
        /// A simple value 0…31 in the two-byte form (§3.3: not well-formed).
        case invalidSimpleValue
        /// Nesting deeper than `CBORLimits.maxDepth`.
        case depthLimitExceeded
        /// More data items than `CBORLimits.maxItems`.
        case itemLimitExceeded
        /// A string or the whole item longer than `CBORLimits.maxBytes`, or a length that does not fit an Int.
        case sizeLimitExceeded
        /// Bytes left after the one item (`CBORDecoder.decode` wants exactly one).
        case trailingBytes
    }

    public var code: Code
    public var offset: Int

    public init(_ code: Code, at offset: Int) {
        self.code = code
        self.offset = offset
    }

    public var description: String { "CBOR \(code.rawValue) at byte \(offset)" }
}

/// Bounds on what one decode may build: a hostile length or nesting is refused before anything is allocated for it.
public struct CBORLimits: Hashable, Sendable {
    /// Containers and tags nested inside each other (the outermost item is depth 1).
    public var maxDepth: Int
    /// Data items in total, every container, key, value, tag content and string chunk counted.
    public var maxItems: Int
    /// Bytes of the encoded item, and so of any one string in it.
    public var maxBytes: Int

    public init(maxDepth: Int = 16, maxItems: Int = 4096, maxBytes: Int = 65_536) {
        self.maxDepth = maxDepth
        self.maxItems = maxItems
        self.maxBytes = maxBytes
    }
}
