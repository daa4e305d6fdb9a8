// libFuzzer target for the CBOR codec (Sources/Core/CBOR, RFC 8949).
//
// Input layout: the whole input is the byte stream, decoded with small limits (depth 8, 256 items, 4 KiB) so that
// libFuzzer reaches them.
//
// Traps (real bugs): an error offset outside the input; decode and decodePrefix disagreeing (a whole item must be
// the prefix item, a nil prefix must be a truncation, a prefix item must decode on its own); a decoded value that
// does not survive encode → decode unchanged, or whose preferred encoding is not stable.

import CBOR
import FuzzSupport

let limits = CBORLimits(maxDepth: 8, maxItems: 256, maxBytes: 4096)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let decoder = CBORDecoder(limits: limits)
    var whole: CBORValue?
    do {
        whole = try decoder.decode(bytes)
    } catch {
        check(error.offset >= 0 && error.offset <= bytes.count, "error offset out of range: \(error)")
    }
    let prefix: (value: CBORValue, byteCount: Int)?
    do {
        prefix = try decoder.decodePrefix(bytes)
    } catch {
        check(error.code != .truncated, "decodePrefix threw truncated instead of returning nil")
        check(whole == nil, "decodePrefix refused what decode accepted: \(error)")
        return 0
    }
    if let whole {
        check(prefix?.value == whole && prefix?.byteCount == bytes.count, "decodePrefix disagrees with decode")
        checkRoundTrip(whole)
    }
    if let prefix {
        check(prefix.byteCount >= 1 && prefix.byteCount <= bytes.count, "prefix byte count out of range")
        let alone: CBORValue
        do {
            alone = try decoder.decode(bytes[..<prefix.byteCount])
        } catch {
            fatalError("the prefix item does not decode on its own: \(error)")
        }
        check(alone == prefix.value, "the prefix item decodes differently on its own")
        checkRoundTrip(prefix.value)
    } else if bytes.count < limits.maxBytes {
        do {
            _ = try decoder.decode(bytes)
            fatalError("decodePrefix said 'need more' for a whole item")
        } catch {
            check(error.code == .truncated, "decodePrefix said 'need more' but decode says \(error)")
        }
    }
    return 0
}

/// Encoded in preferred serialization, the value decodes to itself, and encoding again gives the same bytes.
func checkRoundTrip(_ value: CBORValue) {
    let encoded = value.encoded
    let again: CBORValue
    do {
        // The encoding of an accepted value may be longer than the input (indefinite → definite never is, but a
        // generous limit keeps the check about the codec, not the limit).
        again = try CBORDecoder(limits: CBORLimits(maxDepth: limits.maxDepth, maxItems: limits.maxItems, maxBytes: 1 << 20)).decode(encoded)
    } catch {
        fatalError("re-encoded \(value) does not decode: \(error)")
    }
    check(again == value, "round trip changed \(value) → \(again)")
    check(again.encoded == encoded, "preferred encoding is not stable for \(value)")
}
