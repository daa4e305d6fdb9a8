import Foundation
import Logging
import PostgresNIO
import SyncContract

// Health upload: the tenant's lock, then load the rows a request could touch, plan (HealthUploadPlanner), write, in
// one transaction. The lock is the push's: a tenant's uploads see each other in order, and the UNIQUE constraints
// never fire (their violation would be a 500 for the whole batch).
extension PostgresServerStore {
    public func uploadHealthSamples(_ samples: [HealthSampleUpload], by principal: GatewayPrincipal, storedAt: Int64) async throws -> [HealthUploadResult] {
        let logger = logger
        return try await transaction { connection in
            try await Self.lock(tenant: principal.tenant, connection, logger)
            let state = try await Self.loadHealth(HealthUploadKeys(samples: samples), tenant: principal.tenant, connection, logger)
            var planner = HealthUploadPlanner(state: state, gateway: principal.gateway, storedAt: storedAt)
            let results = samples.map { planner.apply($0) }
            try await Self.writeHealth(planner.writes, tenant: principal.tenant, connection, logger)
            return results
        }
    }

    public func uploadHealthDeletions(_ deletions: [HealthDeletionUpload], by principal: GatewayPrincipal, storedAt: Int64) async throws -> [HealthUploadResult] {
        let logger = logger
        return try await transaction { connection in
            try await Self.lock(tenant: principal.tenant, connection, logger)
            let state = try await Self.loadHealth(HealthUploadKeys(deletions: deletions), tenant: principal.tenant, connection, logger)
            var planner = HealthUploadPlanner(state: state, gateway: principal.gateway, storedAt: storedAt)
            let results = deletions.map { planner.apply($0) }
            try await Self.writeHealth(planner.writes, tenant: principal.tenant, connection, logger)
            return results
        }
    }

    public func deleteHealthSample(tenant: String, tombstone: HealthDeletionUpload, storedAt: Int64) async throws -> HealthSampleDeletion {
        let logger = logger
        return try await transaction { connection in
            try await Self.lock(tenant: tenant, connection, logger)
            let state = try await Self.loadHealth(HealthUploadKeys(deletions: [tombstone]), tenant: tenant, connection, logger)
            var planner = HealthUploadPlanner(state: state, gateway: HealthSampleDeletion.operatorGateway, storedAt: storedAt)
            let outcome = planner.deleteByOperator(tombstone)
            guard let entry = outcome.feedEntry else { return outcome }
            try await Self.writeHealth(planner.writes, tenant: tenant, connection, logger)
            var feed = BatchWrites()
            feed.feed = [entry]
            try await Self.write(feed, tenant: tenant, connection, logger)
            return outcome
        }
    }

    public func healthSamples(tenant: String) async throws -> [HealthSampleRow] {
        let logger = logger
        return try await connection { connection in
            let table = HealthTables.sample
            let query: PostgresQuery =
                "SELECT \(unescaped: table.postgresSelectList()) FROM health_sample WHERE tenant = \(tenant) ORDER BY effective_at, uid"
            return try await Self.fetch(table, query, connection, logger)
        }
    }

    public func healthExportPage(tenant: String, query: HealthExportQuery) async throws -> HealthExportPage {
        let logger = logger
        return try await connection { connection in
            let table = HealthTables.sample
            // COLLATE "C": uids compare byte by byte whatever the database's collation, as the page's order says (and
            // as SQLite's BINARY does); index health_sample_export (PostgresSchema v4).
            var bindings = PostgresBindings()
            func parameter(_ value: some PostgresNonThrowingEncodable) -> String {
                bindings.append(value)
                return "$\(bindings.count)"
            }
            var sql = "SELECT \(table.postgresSelectList()) FROM health_sample WHERE tenant = \(parameter(tenant)) AND deleted_at IS NULL"
            if let since = query.since {
                if let after = query.after {
                    sql += " AND (effective_at, uid COLLATE \"C\") > (\(parameter(since)), \(parameter(after)) COLLATE \"C\")"
                } else {
                    sql += " AND effective_at >= \(parameter(since))"
                }
            }
            if let until = query.until { sql += " AND effective_at < \(parameter(until))" }
            sql += " ORDER BY effective_at, uid COLLATE \"C\""
            if query.rowsToFetch != Int.max { sql += " LIMIT \(parameter(Int64(query.rowsToFetch)))" }
            let rows = try await Self.fetch(table, PostgresQuery(unsafeSQL: sql, binds: bindings), connection, logger)
            return HealthExportPage(fetched: rows, query: query)
        }
    }

    public func healthDeletions(tenant: String) async throws -> [HealthDeletionRow] {
        let logger = logger
        return try await connection { connection in
            let table = HealthTables.deletion
            let query: PostgresQuery =
                "SELECT \(unescaped: table.postgresSelectList()) FROM health_deletion WHERE tenant = \(tenant) ORDER BY requested_at, uid"
            return try await Self.fetch(table, query, connection, logger)
        }
    }

    static func loadHealth(_ keys: HealthUploadKeys, tenant: String, _ connection: PostgresConnection, _ logger: Logger) async throws -> HealthUploadState {
        var state = HealthUploadState()
        if !keys.sampleUIDs.isEmpty || !keys.dedupKeys.isEmpty {
            let query: PostgresQuery = """
                SELECT \(unescaped: HealthTables.sample.postgresSelectList()) FROM health_sample
                WHERE tenant = \(tenant) AND (uid = ANY(\(keys.sampleUIDs)) OR dedup_key = ANY(\(keys.dedupKeys)))
                """
            for row in try await fetch(HealthTables.sample, query, connection, logger) { state.add(row) }
        }
        if !keys.deletionUIDs.isEmpty || !keys.deletedSampleUIDs.isEmpty {
            let query: PostgresQuery = """
                SELECT \(unescaped: HealthTables.deletion.postgresSelectList()) FROM health_deletion
                WHERE tenant = \(tenant) AND (uid = ANY(\(keys.deletionUIDs)) OR sample_uid = ANY(\(keys.deletedSampleUIDs)))
                """
            for row in try await fetch(HealthTables.deletion, query, connection, logger) { state.add(row) }
        }
        return state
    }

    static func writeHealth(_ writes: HealthUploadWrites, tenant: String, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await insert(HealthTables.sample, writes.samples, tenant: tenant, conflict: "", connection, logger)
        try await insert(HealthTables.deletion, writes.deletions, tenant: tenant, conflict: "", connection, logger)
        if !writes.deletedSamples.isEmpty {
            let marks = writes.deletedSamples
            try await connection.query(
                """
                UPDATE health_sample s SET deleted_at = k.deleted_at
                FROM unnest(\(marks.map(\.uid)), \(marks.map(\.deletedAt))) AS k(uid, deleted_at)
                WHERE s.tenant = \(tenant) AND s.uid = k.uid AND s.deleted_at IS NULL
                """, logger: logger)
        }
    }
}

// Health projections: each key's undeleted rows, all in one REPEATABLE READ transaction (one snapshot per answer).
extension PostgresServerStore {
    public func healthProjectionInputs(tenant: String, keys: [HealthProjectionKey]) async throws -> [[HealthProjectionInput]] {
        let logger = logger
        return try await transaction { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            var answers: [[HealthProjectionInput]] = []
            for key in keys {
                guard let day = HealthProjectionDay(text: key.day) else {
                    answers.append([])
                    continue
                }
                let instants = day.instants
                let metric = Int64(key.metricCode)
                let user = key.userIndex.map(Int64.init)
                let query: PostgresQuery = """
                    SELECT uid, value_status, canonical_value, canonical_unit, effective_at FROM health_sample
                    WHERE tenant = \(tenant) AND device_uid = \(key.deviceUid) AND metric_code = \(metric)
                      AND effective_at >= \(instants.lowerBound) AND effective_at < \(instants.upperBound)
                      AND user_index IS NOT DISTINCT FROM \(user)::integer AND deleted_at IS NULL
                    """
                var inputs: [HealthProjectionInput] = []
                let rows = try await connection.query(query, logger: logger)
                for try await (uid, status, value, unit, effectiveAt) in rows.decode((String, String, String?, String, Int64).self) {
                    inputs.append(HealthProjectionInput(uid: uid, valueStatus: status, value: value, unit: unit, effectiveAt: effectiveAt))
                }
                answers.append(inputs)
            }
            return answers
        }
    }
}
