import Foundation
import GRDB

extension Migrations {
    /// Dedup keys named the device by its registry uid; they name it by its identity address now (`HealthDedupKey`):
    /// a gateway that lost its database registers the device under a new uid and reads its stored records again, and
    /// only a key that outlives the database lets the backend tell those readings from new ones. Each stored `seq/`,
    /// `time/` or `receipt/` key whose device field (the second) is its peripheral's uid gets the peripheral's
    /// identity address in upper case; corrections' keys (`correction/<uid>`) name a sample, not a device, and stay.
    ///
    /// The rule is written out here, not taken from `HealthDedupKey`: a migration must do the same thing forever.
    /// The mapping is one to one (an address belongs to one peripheral, and an address is never a uid), so the
    /// UNIQUE index never sees two rows with one key, even half way through.
    static func v11HealthDedupKeysByAddress(_ db: Database) throws {
        let rows = try Row.fetchAll(db, sql: """
            SELECT s.id, s.dedupKey, p.uid, p.identityAddress FROM healthSample s JOIN peripheral p ON p.id = s.peripheralId
            WHERE p.identityAddress IS NOT NULL ORDER BY s.id
            """)
        let update = try db.makeStatement(sql: "UPDATE healthSample SET dedupKey = ? WHERE id = ?")
        for row in rows {
            let key: String = row["dedupKey"]
            let uid: String = row["uid"]
            let address: String = row["identityAddress"]
            var fields = key.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard fields.count > 2, ["seq", "time", "receipt"].contains(fields[0]), fields[1] == uid else { continue }
            fields[1] = address.uppercased()
            try update.execute(arguments: [fields.joined(separator: "/"), row["id"] as Int64])
        }
    }
}
