import Foundation
import GRDB

extension Migrations {
    /// Glucose samples were stored under MDC code 160368 whatever their specimen. That code is
    /// MDC_CONC_GLU_UNDETERMINED_PLASMA (term 29296), not the generic MDC_CONC_GLU_GEN it was labelled: a
    /// capillary whole-blood reading was filed as plasma, which reads about 11 % higher. Each stored Glucose
    /// Measurement (0x2A18) row is recoded from its own raw bytes, as the parser now codes new ones
    /// (HealthProfiles' GlucoseSpecimen), and its dedup key with it, so that the record read again is still the
    /// same row. A correction takes the code of the sample it replaced.
    ///
    /// The codes are written out here, not taken from HealthProfiles: a migration must do the same thing forever,
    /// and the store does not depend on the parsers.
    static func v8GlucoseSpecimenCodes(_ db: Database) throws {
        let oldCode = 160_368
        let glucoseMeasurement = "00002a18-0000-1000-8000-00805f9b34fb"
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, dedupKey, rawBytes FROM healthSample WHERE characteristic = ? AND metricCode = ? ORDER BY id",
            arguments: [glucoseMeasurement, oldCode])
        for row in rows {
            let id: Int64 = row["id"]
            let key: String = row["dedupKey"]
            let code: Int
            if let raw = (row["rawBytes"] as Data?).map(Array.init) {
                code = glucoseCode(rawGlucoseMeasurement: raw)
            } else if let original = try Int.fetchOne(
                db,
                sql: """
                    SELECT original.metricCode FROM healthDeletion d JOIN healthSample original ON original.id = d.sampleId
                    WHERE d.replacementSampleId = ?
                    """,
                arguments: [id])
            {
                code = original  // recoded above: a replacement's id is greater than its original's
            } else {
                code = 160_020
            }
            try db.execute(
                sql: "UPDATE healthSample SET metricCode = ?, dedupKey = ? WHERE id = ?",
                arguments: [code, recodedDedupKey(key, from: oldCode, to: code), id])
        }
    }

    /// GLS v1.0.1 §3.106: Flags, Sequence Number (2), Base Time (7), Time Offset (2, flags bit 0), then with flags
    /// bit 1 the SFLOAT concentration (2) and Type-Sample Location, whose low nibble is the type. Types 1…10 as
    /// IEEE 11073-10417 codes them (partition 2); none or reserved: MDC_CONC_GLU_GEN.
    static func glucoseCode(rawGlucoseMeasurement raw: [UInt8]) -> Int {
        let terms: [UInt8: Int] = [
            1: 29112, 2: 29116, 3: 29120, 4: 29124, 5: 29128, 6: 29132, 7: 29292, 8: 29296, 9: 29140, 10: 29136,
        ]
        guard let flags = raw.first, flags & 0x02 != 0 else { return 160_020 }
        let index = 1 + 2 + 7 + (flags & 0x01 != 0 ? 2 : 0) + 2
        guard index < raw.count, let term = terms[raw[index] & 0x0F] else { return 160_020 }
        return 2 << 16 | term
    }

    /// `HealthDedupKey`'s fifth `/`-separated field is the metric code for `seq/` and `time/` keys (kind, peripheral,
    /// characteristic, user, metric, ...); other keys name no code and stay as they are.
    static func recodedDedupKey(_ key: String, from old: Int, to new: Int) -> String {
        var fields = key.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard fields.count > 4, ["seq", "time", "receipt"].contains(fields[0]), fields[4] == String(old) else { return key }
        fields[4] = String(new)
        return fields.joined(separator: "/")
    }
}
