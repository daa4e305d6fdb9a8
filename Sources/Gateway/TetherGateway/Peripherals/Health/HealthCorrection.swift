import HealthProfiles
import TetherPrimitives
import TetherStore

/// A technician's correction of one stored sample (issue 15, item 2; docs/design/health.md, "The change lane"): the
/// reading's value, or the person it belongs to on a shared device. The change lane stores the replacement as a new
/// version of the reading and tombstones the original in the same transaction (`HealthChange.corrected`); the
/// backend receives the replacement with `replaces` and the original's tombstone.
///
/// What a correction may not do, and why:
/// - Give a value to a reading the device reported as not a number (NaN, NRes, ±INF, reserved: IEEE 11073-20601
///   Annex F.8). A failed measurement has no value to correct; inventing one is a new reading, which a device
///   takes, not a technician. Delete it instead.
/// - Change the unit, the metric or the time: the unit stays the one the device reported (the canonical value is
///   converted from it exactly as the parsers do), and a mis-timed reading is a fault of the time derivation, fixed
///   by decoding its raw bytes again, not by hand.
/// - Say nothing new: a correction equal to the original would tombstone a reading for nothing.
public struct HealthCorrection: Hashable, Sendable {
    /// The value in the original's reported unit (`HealthValue.reportedUnit`); nil keeps the original's.
    public var value: HealthDecimal?
    /// The User Data Service user index the reading belongs to (UDS v1.0 §3.2: 0…254; 255 is "unknown user", not a
    /// person to file a reading under); nil keeps the original's.
    public var userIndex: Int?

    public init(value: HealthDecimal? = nil, userIndex: Int? = nil) {
        self.value = value
        self.userIndex = userIndex
    }

    /// The replacement sample: the original with the corrected fields, its canonical value converted again from the
    /// reported one, and neither raw bytes nor a parser version (no device sent it; the store's CHECK allows that on
    /// the change lane only, and the store sets the lane).
    public func replacement(of original: HealthSample) throws(HealthCorrectionError) -> HealthSample {
        guard value != nil || userIndex != nil else { throw .nothingToCorrect }
        var replacement = original
        if let value {
            guard original.value.status == .number else { throw .notANumber(original.value.status.rawValue) }
            guard (-128...127).contains(value.exponent) else { throw .valueOutOfRange(value.description) }
            guard let unit = HealthUnit(rawValue: original.value.reportedUnit) else { throw .unknownUnit(original.value.reportedUnit) }
            guard let canonical = unit.canonicalValue(ExactDecimal(significand: value.mantissa, exponent: Int(value.exponent))),
                (-128...127).contains(canonical.value.exponent)
            else { throw .valueOutOfRange(value.description) }
            replacement.value = HealthValue(
                status: .number, reported: value, reportedUnit: unit.ucum,
                canonical: HealthDecimal(mantissa: canonical.value.significand, exponent: Int32(canonical.value.exponent)),
                canonicalUnit: unit.canonical.ucum)
        }
        if let userIndex {
            guard (0...254).contains(userIndex) else { throw .userIndexOutOfRange(userIndex) }
            replacement.userIndex = userIndex
        }
        guard !replacement.value.isNumericallyEqual(to: original.value) || replacement.userIndex != original.userIndex else {
            throw .nothingToCorrect
        }
        replacement.lane = .change
        replacement.rawBytes = nil
        replacement.parserVersion = nil
        return replacement
    }
}

/// Why a correction was refused; each message says what to do instead.
public enum HealthCorrectionError: Error, Hashable, Sendable, CustomStringConvertible {
    case nothingToCorrect
    case notANumber(String)
    case unknownUnit(String)
    case valueOutOfRange(String)
    case userIndexOutOfRange(Int)

    public var description: String {
        switch self {
        case .nothingToCorrect:
            "the correction changes nothing: give a value or a user index that differs from the sample's"
        case .notANumber(let status):
            "the device reported this reading as \(status) (not a number): a failed measurement has no value to correct; delete it instead"
        case .unknownUnit(let unit):
            "the sample's unit \(unit) is not one the gateway converts; it cannot be corrected by value"
        case .valueOutOfRange(let value):
            "\(value) cannot be stored exactly (too many digits)"
        case .userIndexOutOfRange(let index):
            "user index \(index) is not a person's (User Data Service: 0 to 254)"
        }
    }
}

extension HealthValue {
    /// Equal as numbers in the same unit (`120` and `120.0` are the same reading), or the same special value.
    func isNumericallyEqual(to other: HealthValue) -> Bool {
        guard status == other.status, reportedUnit == other.reportedUnit else { return false }
        guard let mine = reported, let theirs = other.reported else { return reported == other.reported }
        return ExactDecimal(significand: mine.mantissa, exponent: Int(mine.exponent))
            .isNumericallyEqual(to: ExactDecimal(significand: theirs.mantissa, exponent: Int(theirs.exponent)))
    }
}
