import GRDB

/// How many samples the store holds for one peripheral and the newest one's effective time (control API
/// `ListHealthDevices`, `tether health devices`). Deleted samples are not counted.
public struct HealthSampleSummary: Hashable, Sendable {
    public var peripheralUid: String
    public var samples: Int
    /// The latest `effectiveAt` (UTC nanoseconds).
    public var lastEffectiveAt: Int64
}

extension HealthStore {
    /// One summary per peripheral that has samples, by registry uid.
    public func sampleSummaries() throws(StoreError) -> [String: HealthSampleSummary] {
        try database.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT peripheral.uid AS uid, COUNT(*) AS n, MAX(healthSample.effectiveAt) AS latest
                FROM healthSample JOIN peripheral ON peripheral.id = healthSample.peripheralId
                WHERE healthSample.deletedAt IS NULL GROUP BY peripheral.uid
                """)
            var summaries: [String: HealthSampleSummary] = [:]
            for row in rows {
                let uid: String = row["uid"]
                summaries[uid] = HealthSampleSummary(peripheralUid: uid, samples: row["n"], lastEffectiveAt: row["latest"])
            }
            return summaries
        }
    }
}
