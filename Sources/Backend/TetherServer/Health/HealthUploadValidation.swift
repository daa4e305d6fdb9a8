import Foundation
import SyncContract

/// The rules a health sample or tombstone must meet before the server stores it (docs/specs/sync-api.yaml,
/// "Health"). An item that breaks one is answered `rejected` with a reason that names the field; the rest of its
/// request goes on. Everything the tables' CHECKs would refuse is refused here first, so a bad item never becomes
/// a failed transaction (a 500 for the whole batch).
///
/// The accepted words are the gateway's (Sources/Gateway/TetherStore/Health/HealthSample.swift: `HealthTimeBasis`,
/// `HealthLane`; Sources/Gateway/TetherStore/Migrations.swift v6: healthSample and healthDeletion CHECKs), repeated
/// here because the server does not link the gateway's store; HealthUploadValidationTests compares the two.
public enum HealthUploadValidation {
    /// IEEE 11073-20601 Annex F.8: a special value is a status, never a number.
    public static let valueStatuses: Set<String> = ["number", "nan", "nres", "positive-infinity", "negative-infinity", "reserved"]
    /// `HealthTimeBasis` raw values.
    public static let timeBases: Set<String> = [
        "clock-set-by-gateway", "local-time-with-offset", "coincident-clock-reading", "cgm-session-start", "device-time-unverified", "receipt",
    ]
    /// `HealthLane` raw values.
    public static let lanes: Set<String> = ["hot", "cold", "change"]
    public static let deletionReasons: Set<String> = ["technician", "backend", "vanished-from-device", "correction"]
    public static let requesters: Set<String> = ["technician", "backend", "gateway"]

    /// Why `sample` cannot be stored, or `nil` when it can.
    public static func problem(in sample: HealthSampleUpload) -> String? {
        var checks: [String?] = [
            uuid(sample.uid, "uid"),
            text(sample.dedupKey, "dedup_key", 1...512),
            text(sample.device.uid, "device.uid", 1...128),
            optionalText(sample.device.address, "device.address", 0...64),
            optionalText(sample.device.manufacturer, "device.manufacturer", 0...256),
            optionalText(sample.device.model, "device.model", 0...256),
            optionalText(sample.device.serial, "device.serial", 0...256),
            lowercaseUUID(sample.characteristic, "characteristic"),
            // IEEE 11073-10101: partition << 16 | term code, both 16 bits; 0 is no code.
            range(Int64(sample.metricCode), "metric_code", 1...4_294_967_295),
            range(Int64(sample.occurrence), "occurrence", 0...255),
            member(sample.valueStatus, "value_status", valueStatuses),
        ]
        checks += numberRules(sample)
        checks += [
            text(sample.reported.unit, "reported.unit", 1...64),
            text(sample.canonical.unit, "canonical.unit", 1...64),
            optionalText(sample.deviceTime, "device_time", 1...64),
            member(sample.timeBasis, "time_basis", timeBases),
            sample.timeBasis != "receipt" && sample.deviceTime == nil ? "device_time is required unless time_basis is receipt" : nil,
            // User Data Service: the user index is one octet (0xFF "unknown user").
            sample.userIndex.flatMap { range(Int64($0), "user_index", 0...255) },
            sample.recordSequence.flatMap { range($0, "record_sequence", 0...Int64.max) },
            range(sample.epoch, "epoch", 0...Int64.max),
            member(sample.lane, "lane", lanes),
        ]
        checks += rawBytesRules(sample)
        if let replaces = sample.replaces {
            checks.append(uuid(replaces, "replaces"))
            checks.append(replaces.lowercased() == sample.uid.lowercased() ? "replaces names the sample itself" : nil)
        }
        return checks.lazy.compactMap { $0 }.first
    }

    /// Why `deletion` cannot be stored, or `nil` when it can. The pairing of reason and requester is the gateway's
    /// (healthDeletion CHECKs): a technician's or the backend's deletion is theirs, a vanished record is the
    /// gateway's finding, a correction is a person's or the backend's.
    public static func problem(in deletion: HealthDeletionUpload) -> String? {
        var checks: [String?] = [
            uuid(deletion.uid, "uid"),
            uuid(deletion.sampleUid, "sample_uid"),
            member(deletion.reason, "reason", deletionReasons),
            member(deletion.requestedBy, "requested_by", requesters),
        ]
        let allowed: Set<String> =
            switch deletion.reason {
            case "technician": ["technician"]
            case "backend": ["backend"]
            case "vanished-from-device": ["gateway"]
            default: ["technician", "backend"]
            }
        if !allowed.contains(deletion.requestedBy) {
            checks.append("requested_by \(deletion.requestedBy) cannot request a deletion for reason \(deletion.reason)")
        }
        if (deletion.reason == "correction") != (deletion.replacementSampleUid != nil) {
            checks.append("replacement_sample_uid is required for reason correction and only for it")
        }
        if let replacement = deletion.replacementSampleUid {
            checks.append(uuid(replacement, "replacement_sample_uid"))
            if replacement.lowercased() == deletion.sampleUid.lowercased() { checks.append("replacement_sample_uid names the deleted sample itself") }
        }
        checks.append(optionalText(deletion.note, "note", 1...1000))
        checks.append(optionalText(deletion.sampleDedupKey, "sample_dedup_key", 1...512))
        return checks.lazy.compactMap { $0 }.first
    }

    // MARK: - The value's rules

    /// `number` ⇔ a reported mantissa and exponent ⇔ a canonical value (IEEE 11073-20601 Annex F.8: a special
    /// value has no number to convert).
    private static func numberRules(_ sample: HealthSampleUpload) -> [String?] {
        let isNumber = sample.valueStatus == "number"
        var checks: [String?] = []
        if (sample.reported.mantissa != nil) != isNumber || (sample.reported.exponent != nil) != isNumber {
            checks.append("reported.mantissa and reported.exponent are present exactly when value_status is number")
        }
        if (sample.canonical.value != nil) != isNumber {
            checks.append("canonical.value is present exactly when value_status is number")
        }
        // The exponent is a signed octet (SFLOAT's 4 bits, FLOAT's 8 bits: IEEE 11073-20601 Annex F.8).
        checks.append(sample.reported.exponent.flatMap { range(Int64($0), "reported.exponent", -128...127) })
        if let value = sample.canonical.value, !isPlainDecimal(value) {
            checks.append("canonical.value must be a plain decimal numeral (-?digits[.digits], at most 80 characters), not \(quoted(value))")
        }
        return checks
    }

    /// Raw bytes are what a parser fix decodes again: required except for a correction (lane `change`), and then
    /// with the parser that read them.
    private static func rawBytesRules(_ sample: HealthSampleUpload) -> [String?] {
        guard let raw = sample.rawBytes else {
            return [
                sample.lane == "change" ? nil : "raw_bytes is required unless lane is change",
                sample.parserVersion.flatMap { range(Int64($0), "parser_version", 1...Int64(Int32.max)) },
            ]
        }
        let hex = raw.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        return [
            hex && raw.utf8.count % 2 == 0 && (2...2048).contains(raw.utf8.count)
                ? nil : "raw_bytes must be lowercase hex of 1 to 1024 bytes (2 to 2048 digits)",
            sample.parserVersion == nil ? "parser_version is required with raw_bytes" : nil,
            sample.parserVersion.flatMap { range(Int64($0), "parser_version", 1...Int64(Int32.max)) },
        ]
    }

    /// `-?[0-9]+(\.[0-9]+)?`, 1 to 80 characters: the gateway's canonicalValue CHECK, without exponent or `+`.
    static func isPlainDecimal(_ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        guard (1...80).contains(bytes.count) else { return false }
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2 else { return false }
        return parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { (48...57).contains($0) } }
    }

    // MARK: - Field checks: each names its field

    private static func uuid(_ value: String, _ field: String) -> String? {
        value.utf8.count == 36 && UUID(uuidString: value) != nil ? nil : "\(field) must be a UUID (36 characters), not \(quoted(value))"
    }

    private static func lowercaseUUID(_ value: String, _ field: String) -> String? {
        value.utf8.count == 36 && UUID(uuidString: value) != nil && value == value.lowercased()
            ? nil : "\(field) must be a 128-bit UUID in lowercase (36 characters), not \(quoted(value))"
    }

    /// Lengths count Unicode scalars, as SQLite's and PostgreSQL's `length()` and JSON Schema's `maxLength` do. NUL
    /// is refused: PostgreSQL's text cannot hold it and SQLite's `length()` stops at it.
    private static func text(_ value: String, _ field: String, _ lengths: ClosedRange<Int>) -> String? {
        guard !value.unicodeScalars.contains("\u{0}") else { return "\(field) must not contain NUL" }
        let count = value.unicodeScalars.count
        return lengths.contains(count) ? nil : "\(field) must be \(lengths.lowerBound) to \(lengths.upperBound) characters, not \(count)"
    }

    private static func optionalText(_ value: String?, _ field: String, _ lengths: ClosedRange<Int>) -> String? {
        value.flatMap { text($0, field, lengths) }
    }

    private static func range(_ value: Int64, _ field: String, _ allowed: ClosedRange<Int64>) -> String? {
        if allowed.contains(value) { return nil }
        if allowed.upperBound == Int64.max { return "\(field) must be at least \(allowed.lowerBound), not \(value)" }
        return "\(field) must be \(allowed.lowerBound) to \(allowed.upperBound), not \(value)"
    }

    private static func member(_ value: String, _ field: String, _ allowed: Set<String>) -> String? {
        allowed.contains(value) ? nil : "\(field) must be one of \(allowed.sorted().joined(separator: ", ")), not \(quoted(value))"
    }

    /// A value quoted into a reason, cut short: reasons are for people and must stay small.
    private static func quoted(_ value: String) -> String {
        var cut = ""
        cut.unicodeScalars.append(contentsOf: value.unicodeScalars.prefix(40).filter { $0 != "\u{0}" })
        return "\"" + cut + (value.unicodeScalars.count > 40 ? "…" : "") + "\""
    }
}
