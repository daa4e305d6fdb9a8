/// A plain decimal numeral as an exact value (sign, decimal digits, scale) with the few operations a rollup needs:
/// order, sum, and the mean rounded half to even. Arbitrary length: a canonical value may hold up to 80 characters
/// (the v2 schema's limit), beyond any binary or 38-digit decimal type, and a rollup must never round an input.
struct ExactDecimal: Sendable {
    /// Magnitude digits, most significant first, no leading zeros (zero is `[]`).
    private(set) var digits: [UInt8]
    /// Digits after the point.
    private(set) var scale: Int
    private(set) var negative: Bool

    static let zero = ExactDecimal(digits: [], scale: 0, negative: false)

    private init(digits: [UInt8], scale: Int, negative: Bool) {
        var trimmed = digits[...]
        while trimmed.first == 0 { trimmed = trimmed.dropFirst() }
        self.digits = Array(trimmed)
        self.scale = scale
        self.negative = negative && !trimmed.isEmpty
    }

    /// `nil` unless `numeral` is `-?[0-9]+(\.[0-9]+)?` (the form of `canonical.value`, docs/specs/sync-api.yaml).
    init?(numeral: String) {
        var bytes = Array(numeral.utf8)[...]
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { bytes = bytes.dropFirst() }
        let parts = bytes.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, parts.count == 1 || !parts[1].isEmpty else { return nil }
        let fraction = parts.count == 2 ? parts[1] : []
        var digits: [UInt8] = []
        for byte in whole + fraction {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            digits.append(byte - UInt8(ascii: "0"))
        }
        self.init(digits: digits, scale: fraction.count, negative: negative)
    }

    /// The numeral with exactly `scale` fraction digits (no sign on zero).
    var numeral: String {
        var magnitude = digits
        if magnitude.count <= scale { magnitude.insert(contentsOf: [UInt8](repeating: 0, count: scale - magnitude.count + 1), at: 0) }
        var text = negative ? "-" : ""
        for (index, digit) in magnitude.enumerated() {
            if index == magnitude.count - scale { text += "." }
            text.append(Character(Unicode.Scalar(UInt8(ascii: "0") + digit)))
        }
        return text
    }

    /// The same value with `scale` fraction digits (`scale` at least the current one).
    private func scaled(to scale: Int) -> [UInt8] { digits + [UInt8](repeating: 0, count: scale - self.scale) }

    private static func compareMagnitudes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        // Both without leading zeros, at the same scale: the longer is larger, then digit by digit.
        let a = a.drop { $0 == 0 }, b = b.drop { $0 == 0 }
        if a.count != b.count { return a.count < b.count ? -1 : 1 }
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return 0
    }

    /// -1, 0 or 1 as `a` is less than, equal to or greater than `b` (by value: `80.5` equals `80.50`).
    static func compare(_ a: ExactDecimal, _ b: ExactDecimal) -> Int {
        if a.negative != b.negative { return a.negative ? -1 : 1 }
        let scale = Swift.max(a.scale, b.scale)
        let order = compareMagnitudes(a.scaled(to: scale), b.scaled(to: scale))
        return a.negative ? -order : order
    }

    static func + (a: ExactDecimal, b: ExactDecimal) -> ExactDecimal {
        let scale = Swift.max(a.scale, b.scale)
        let x = a.scaled(to: scale), y = b.scaled(to: scale)
        if a.negative == b.negative { return ExactDecimal(digits: add(x, y), scale: scale, negative: a.negative) }
        // Opposite signs: the larger magnitude minus the smaller, with the larger's sign.
        return compareMagnitudes(x, y) >= 0
            ? ExactDecimal(digits: subtract(x, y), scale: scale, negative: a.negative)
            : ExactDecimal(digits: subtract(y, x), scale: scale, negative: b.negative)
    }

    private static func add(_ x: [UInt8], _ y: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var carry: UInt8 = 0
        var i = x.count - 1, j = y.count - 1
        while i >= 0 || j >= 0 || carry > 0 {
            let sum = (i >= 0 ? x[i] : 0) + (j >= 0 ? y[j] : 0) + carry
            result.append(sum % 10)
            carry = sum / 10
            i -= 1
            j -= 1
        }
        return result.reversed()
    }

    /// `x - y` for `x ≥ y`.
    private static func subtract(_ x: [UInt8], _ y: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var borrow = 0
        var j = y.count - 1
        for i in stride(from: x.count - 1, through: 0, by: -1) {
            var difference = Int(x[i]) - (j >= 0 ? Int(y[j]) : 0) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 10 }
            result.append(UInt8(difference))
            j -= 1
        }
        return result.reversed()
    }

    /// `self / divisor` rounded half to even to `fractionDigits` digits (IEEE 754's roundTiesToEven; Python's
    /// `ROUND_HALF_EVEN`), exactly: no intermediate rounding.
    func divided(by divisor: Int, fractionDigits: Int) -> ExactDecimal {
        precondition(divisor > 0)
        // self = N / 10^scale. The mean at `fractionDigits` is round(N / (divisor · 10^k)) with k = scale - fractionDigits
        // when that is positive: split N = A · 10^k + B (B the last k digits), divide A by the divisor (q, r), then the
        // remainder R = r · 10^k + B decides: 2R against divisor · 10^k.
        let k = Swift.max(0, scale - fractionDigits)
        let padded = digits + [UInt8](repeating: 0, count: Swift.max(0, fractionDigits - scale))
        let a = padded.dropLast(Swift.min(k, padded.count))
        let b = padded.suffix(Swift.min(k, padded.count)).drop { $0 == 0 }
        var quotient: [UInt8] = []
        var remainder = 0
        for digit in a {
            let current = remainder * 10 + Int(digit)
            quotient.append(UInt8(current / divisor))
            remainder = current % divisor
        }
        // Sign of 2R - divisor · 10^k = (2r - divisor) · 10^k + 2B, with 0 ≤ B < 10^k.
        let bAgainstHalf: Int  // B against 10^k / 2
        if k == 0 {
            bAgainstHalf = -1  // B = 0 < 1/2
        } else {
            // 10^k / 2 is 5 followed by k-1 zeros; B has at most k digits.
            let half = [UInt8(5)] + [UInt8](repeating: 0, count: k - 1)
            bAgainstHalf = Self.compareMagnitudes([UInt8](repeating: 0, count: k - b.count) + Array(b), half)
        }
        let direction: Int =
            switch 2 * remainder - divisor {
            case 1...: 1
            case 0: b.isEmpty ? 0 : 1
            case -1: bAgainstHalf
            default: -1
            }
        let odd = (quotient.last ?? 0) % 2 == 1
        if direction > 0 || (direction == 0 && odd) { quotient = Self.add(quotient, [1]) }
        return ExactDecimal(digits: quotient, scale: fractionDigits, negative: negative)
    }
}
