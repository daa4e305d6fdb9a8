import Foundation
import GRDB
import SyncContract

// Health upload: load the rows a request could touch, plan (HealthUploadPlanner), write, in one transaction. SQLite
// has one writer, so requests of every tenant are already serialised.
extension SQLiteServerStore {
    public func uploadHealthSamples(_ samples: [HealthSampleUpload], by principal: GatewayPrincipal, storedAt: Int64) async throws -> [HealthUploadResult] {
        try await write { db in
            let state = try Self.loadHealth(HealthUploadKeys(samples: samples), tenant: principal.tenant, db)
            var planner = HealthUploadPlanner(state: state, gateway: principal.gateway, storedAt: storedAt)
            let results = samples.map { planner.apply($0) }
            try Self.writeHealth(planner.writes, tenant: principal.tenant, db)
            return results
        }
    }

    public func uploadHealthDeletions(_ deletions: [HealthDeletionUpload], by principal: GatewayPrincipal, storedAt: Int64) async throws -> [HealthUploadResult] {
        try await write { db in
            let state = try Self.loadHealth(HealthUploadKeys(deletions: deletions), tenant: principal.tenant, db)
            var planner = HealthUploadPlanner(state: state, gateway: principal.gateway, storedAt: storedAt)
            let results = deletions.map { planner.apply($0) }
            try Self.writeHealth(planner.writes, tenant: principal.tenant, db)
            return results
        }
    }

    public func deleteHealthSample(tenant: String, tombstone: HealthDeletionUpload, storedAt: Int64) async throws -> HealthSampleDeletion {
        try await write { db in
            let state = try Self.loadHealth(HealthUploadKeys(deletions: [tombstone]), tenant: tenant, db)
            var planner = HealthUploadPlanner(state: state, gateway: HealthSampleDeletion.operatorGateway, storedAt: storedAt)
            let outcome = planner.deleteByOperator(tombstone)
            guard let entry = outcome.feedEntry else { return outcome }
            try Self.writeHealth(planner.writes, tenant: tenant, db)
            var feed = BatchWrites()
            feed.feed = [entry]
            try Self.write(feed, tenant: tenant, db)
            return outcome
        }
    }

    public func healthSamples(tenant: String) async throws -> [HealthSampleRow] {
        try await pool.read { db in
            let table = HealthTables.sample
            return try Row.fetchAll(
                db, sql: "SELECT \(table.sqliteSelectList) FROM health_sample WHERE tenant = ? ORDER BY effective_at, uid", arguments: [tenant]
            ).map { try table.read(SQLiteRowReader(row: $0)) }
        }
    }

    public func healthExportPage(tenant: String, query: HealthExportQuery) async throws -> HealthExportPage {
        try await pool.read { db in
            let table = HealthTables.sample
            // BINARY collation: uids compare byte by byte, as the page's order says; index health_sample_time.
            var sql = "SELECT \(table.sqliteSelectList) FROM health_sample WHERE tenant = ? AND deleted_at IS NULL"
            var arguments: StatementArguments = [tenant]
            if let since = query.since {
                if let after = query.after {
                    sql += " AND (effective_at, uid) > (?, ?)"
                    arguments += [since, after]
                } else {
                    sql += " AND effective_at >= ?"
                    arguments += [since]
                }
            }
            if let until = query.until {
                sql += " AND effective_at < ?"
                arguments += [until]
            }
            sql += " ORDER BY effective_at, uid LIMIT ?"
            arguments += [query.rowsToFetch == Int.max ? -1 : query.rowsToFetch]  // -1: no limit (SQLite's LIMIT)
            let rows = try Row.fetchAll(db, sql: sql, arguments: arguments).map { try table.read(SQLiteRowReader(row: $0)) }
            return HealthExportPage(fetched: rows, query: query)
        }
    }

    public func healthDeletions(tenant: String) async throws -> [HealthDeletionRow] {
        try await pool.read { db in
            let table = HealthTables.deletion
            return try Row.fetchAll(
                db, sql: "SELECT \(table.sqliteSelectList) FROM health_deletion WHERE tenant = ? ORDER BY requested_at, uid", arguments: [tenant]
            ).map { try table.read(SQLiteRowReader(row: $0)) }
        }
    }

    static func loadHealth(_ keys: HealthUploadKeys, tenant: String, _ db: Database) throws -> HealthUploadState {
        var state = HealthUploadState()
        let samples = HealthTables.sample
        let deletions = HealthTables.deletion
        for uid in keys.sampleUIDs {
            if let row = try fetchOne(samples, tenant: tenant, key: [.text(uid)], db) { state.add(row) }
        }
        let byDedupKey = try db.cachedStatement(sql: "SELECT \(samples.sqliteSelectList) FROM health_sample WHERE tenant = ? AND dedup_key = ?")
        for key in keys.dedupKeys {
            if let row = try Row.fetchOne(byDedupKey, arguments: [tenant, key]) { state.add(try samples.read(SQLiteRowReader(row: row))) }
        }
        for uid in keys.deletionUIDs {
            if let row = try fetchOne(deletions, tenant: tenant, key: [.text(uid)], db) { state.add(row) }
        }
        let bySample = try db.cachedStatement(sql: "SELECT \(deletions.sqliteSelectList) FROM health_deletion WHERE tenant = ? AND sample_uid = ?")
        for uid in keys.deletedSampleUIDs {
            if let row = try Row.fetchOne(bySample, arguments: [tenant, uid]) { state.add(try deletions.read(SQLiteRowReader(row: row))) }
        }
        return state
    }

    static func writeHealth(_ writes: HealthUploadWrites, tenant: String, _ db: Database) throws {
        try insert(HealthTables.sample, writes.samples, tenant: tenant, db)
        try insert(HealthTables.deletion, writes.deletions, tenant: tenant, db)
        let mark = try db.cachedStatement(sql: "UPDATE health_sample SET deleted_at = ? WHERE tenant = ? AND uid = ? AND deleted_at IS NULL")
        for deleted in writes.deletedSamples { try mark.execute(arguments: [deleted.deletedAt, tenant, deleted.uid]) }
    }
}

// Health projections: each key's undeleted rows in one read transaction (one snapshot for the whole answer).
extension SQLiteServerStore {
    public func healthProjectionInputs(tenant: String, keys: [HealthProjectionKey]) async throws -> [[HealthProjectionInput]] {
        try await pool.read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT uid, value_status, canonical_value, canonical_unit, effective_at FROM health_sample
                    WHERE tenant = ? AND device_uid = ? AND metric_code = ? AND effective_at >= ? AND effective_at < ?
                      AND user_index IS ? AND deleted_at IS NULL
                    """)
            return try keys.map { key in
                // A key whose day does not parse names no samples (the route refuses such keys before this).
                guard let day = HealthProjectionDay(text: key.day) else { return [] }
                let instants = day.instants
                return try Row.fetchAll(
                    statement, arguments: [tenant, key.deviceUid, key.metricCode, instants.lowerBound, instants.upperBound, key.userIndex]
                ).map { row in
                    HealthProjectionInput(
                        uid: row["uid"], valueStatus: row["value_status"], value: row["canonical_value"], unit: row["canonical_unit"],
                        effectiveAt: row["effective_at"])
                }
            }
        }
    }
}
