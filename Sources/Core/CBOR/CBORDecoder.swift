/// Decodes one CBOR data item (RFC 8949 §3) from bytes: definite and indefinite lengths (§3.2), tags, simple values
/// and floats, within `CBORLimits`. Refuses what is not well-formed (Appendix F) and invalid UTF-8 text, with the
/// offset; never traps and never allocates more than the bytes it was given could fill.
public struct CBORDecoder {
    public let limits: CBORLimits

    public init(limits: CBORLimits = CBORLimits()) { self.limits = limits }

    /// Exactly one item filling `bytes`; trailing bytes and a truncated item are both errors.
    public func decode(_ bytes: some Collection<UInt8>) throws(CBORError) -> CBORValue {
        let array = Array(bytes)
        var cursor = Cursor(bytes: array, limits: limits)
        guard array.count <= limits.maxBytes else { throw CBORError(.sizeLimitExceeded, at: limits.maxBytes) }
        let value = try cursor.item(depth: 1)
        guard cursor.offset == array.count else { throw CBORError(.trailingBytes, at: cursor.offset) }
        return value
    }

    /// The first item of `bytes` and how many bytes it took, or nil when the bytes end before the item does (a
    /// stream should wait for more). Errors are bad bytes: more bytes would not help.
    public func decodePrefix(_ bytes: some Collection<UInt8>) throws(CBORError) -> (value: CBORValue, byteCount: Int)? {
        let array = Array(bytes.prefix(limits.maxBytes))
        var cursor = Cursor(bytes: array, limits: limits)
        do {
            let value = try cursor.item(depth: 1)
            return (value, cursor.offset)
        } catch where error.code == .truncated {
            // Truncated within the size limit: more bytes may complete it. Truncated at the limit: they cannot.
            if array.count >= limits.maxBytes { throw CBORError(.sizeLimitExceeded, at: limits.maxBytes) }
            return nil
        }
    }
}

/// The decoding walk: an offset into the bytes and the number of items seen so far.
private struct Cursor {
    let bytes: [UInt8]
    let limits: CBORLimits
    var offset = 0
    var items = 0

    init(bytes: [UInt8], limits: CBORLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    var remaining: Int { bytes.count - offset }

    /// The initial byte and argument of the next item (RFC 8949 §3: major type in the high 3 bits, additional
    /// information in the low 5; 24…27 take a 1, 2, 4 or 8-byte big-endian argument). `argument` is nil for 31.
    mutating func head() throws(CBORError) -> (major: UInt8, info: UInt8, argument: UInt64?, start: Int) {
        let start = offset
        guard offset < bytes.count else { throw CBORError(.truncated, at: offset) }
        let initial = bytes[offset]
        let major = initial >> 5
        let info = initial & 0x1F
        let width: Int
        switch info {
        case 0..<24:
            offset += 1
            return (major, info, UInt64(info), start)
        case 24: width = 1
        case 25: width = 2
        case 26: width = 4
        case 27: width = 8
        case 31:
            offset += 1
            return (major, info, nil, start)
        default: throw CBORError(.reservedAdditionalInfo, at: start)
        }
        guard remaining >= 1 + width else { throw CBORError(.truncated, at: bytes.count) }
        var value: UInt64 = 0
        for index in 1...width { value = value << 8 | UInt64(bytes[start + index]) }
        offset += 1 + width
        return (major, info, value, start)
    }

    mutating func countItem(at start: Int) throws(CBORError) {
        items += 1
        guard items <= limits.maxItems else { throw CBORError(.itemLimitExceeded, at: start) }
    }

    /// A length argument as an Int no larger than the bytes left: a hostile length is truncated (or over the size
    /// limit), never allocated.
    mutating func length(_ argument: UInt64, at start: Int) throws(CBORError) -> Int {
        guard argument <= UInt64(limits.maxBytes), let length = Int(exactly: argument) else {
            throw CBORError(.sizeLimitExceeded, at: start)
        }
        guard length <= remaining else { throw CBORError(.truncated, at: bytes.count) }
        return length
    }

    mutating func item(depth: Int) throws(CBORError) -> CBORValue {
        let (major, info, argument, start) = try head()
        try countItem(at: start)
        switch major {
        case 0, 1:
            guard let argument else { throw CBORError(.unexpectedIndefiniteOrBreak, at: start) }
            return major == 0 ? .unsigned(argument) : .negative(argument)
        case 2, 3:
            let content: [UInt8]
            if let argument {
                let count = try length(argument, at: start)
                content = Array(bytes[offset..<(offset + count)])
                offset += count
                if major == 3 { return .text(try text(content, at: start)) }
            } else {
                content = try chunks(major: major)
            }
            return major == 2 ? .bytes(content) : .text(try text(content, at: start))
        case 4:
            try enter(depth, at: start)
            var elements: [CBORValue] = []
            if let argument {
                // Each element takes at least one byte: a count beyond the bytes left is truncated, not allocated.
                guard argument <= UInt64(remaining) else { throw CBORError(.truncated, at: bytes.count) }
                elements.reserveCapacity(Int(argument))
                for _ in 0..<argument { elements.append(try item(depth: depth + 1)) }
            } else {
                while try !atBreak() { elements.append(try item(depth: depth + 1)) }
            }
            return .array(elements)
        case 5:
            try enter(depth, at: start)
            var pairs: [CBORPair] = []
            if let argument {
                guard argument <= UInt64(remaining / 2) else { throw CBORError(.truncated, at: bytes.count) }
                pairs.reserveCapacity(Int(argument))
                for _ in 0..<argument {
                    let key = try item(depth: depth + 1)
                    pairs.append(CBORPair(key, try item(depth: depth + 1)))
                }
            } else {
                while try !atBreak() {
                    let key = try item(depth: depth + 1)
                    // §3.2.2: every key needs a value; a break in its place is refused by item() as a stray break.
                    pairs.append(CBORPair(key, try item(depth: depth + 1)))
                }
            }
            return .map(pairs)
        case 6:
            guard let argument else { throw CBORError(.unexpectedIndefiniteOrBreak, at: start) }
            try enter(depth, at: start)
            return .tagged(argument, try item(depth: depth + 1))
        default:
            return try simpleOrFloat(info: info, argument: argument, at: start)
        }
    }

    func enter(_ depth: Int, at start: Int) throws(CBORError) {
        guard depth <= limits.maxDepth else { throw CBORError(.depthLimitExceeded, at: start) }
    }

    /// True (and the break consumed) when the next byte is the break stop code that ends an indefinite item.
    mutating func atBreak() throws(CBORError) -> Bool {
        guard offset < bytes.count else { throw CBORError(.truncated, at: offset) }
        guard bytes[offset] == 0xFF else { return false }
        offset += 1
        return true
    }

    /// RFC 8949 §3.2.3: an indefinite-length string is definite-length chunks of the same major type, then a break.
    mutating func chunks(major: UInt8) throws(CBORError) -> [UInt8] {
        var content: [UInt8] = []
        while try !atBreak() {
            let (chunkMajor, _, argument, start) = try head()
            guard chunkMajor == major, let argument else { throw CBORError(.invalidChunk, at: start) }
            try countItem(at: start)
            let count = try length(argument, at: start)
            let chunk = bytes[offset..<(offset + count)]
            // Each text chunk must be valid UTF-8 on its own (§3.2.3: chunks do not split a character).
            if major == 3 { _ = try text(Array(chunk), at: start) }
            content.append(contentsOf: chunk)
            offset += count
        }
        return content
    }

    func text(_ content: [UInt8], at start: Int) throws(CBORError) -> String {
        guard let string = String(validating: content, as: UTF8.self) else { throw CBORError(.invalidUTF8, at: start) }
        return string
    }

    /// Major type 7 (RFC 8949 §3.3).
    func simpleOrFloat(info: UInt8, argument: UInt64?, at start: Int) throws(CBORError) -> CBORValue {
        guard let argument else { throw CBORError(.unexpectedIndefiniteOrBreak, at: start) }  // a stray break
        switch info {
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 23: return .undefined
        case 0..<20: return .simple(UInt8(info))
        case 24:
            guard argument >= 32 else { throw CBORError(.invalidSimpleValue, at: start) }
            return .simple(UInt8(truncatingIfNeeded: argument))
        case 25: return .float16(bits: UInt16(truncatingIfNeeded: argument))
        case 26: return .float32(bits: UInt32(truncatingIfNeeded: argument))
        default: return .float64(bits: argument)  // 27; 28…31 were refused by head()
        }
    }
}
