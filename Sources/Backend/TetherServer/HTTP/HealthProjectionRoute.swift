import Hummingbird
import SyncContract
import TetherPrimitives

/// `POST /v1/health/projections` (docs/specs/sync-api.yaml, "Health projections"): the token's tenant's daily rollups
/// for the keys asked, one per key in request order, computed from the samples as they are now (`HealthRollupCalculation`).
/// A POST because a gateway asks for a few hundred keys at once; it changes nothing. Unlike an upload's items, a
/// key is checked whole: one that breaks the schema is a 400 for the request, since it can name no samples.
struct HealthProjectionRoute {
    let store: any ServerStore
    let limits: ServerLimits
    let clock: @Sendable () -> Timestamp

    func handle(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let body = try await JSONRequestBody.read(HealthProjectionsRequest.self, from: request, limit: limits.maximumRequestBytes)
        try Self.validate(body.keys)
        // A device uid with NUL is schema-valid but no stored sample has one (uploads refuse it, and PostgreSQL's text
        // cannot hold it): such a key has no samples, asked of no database.
        let storable = body.keys.filter { !$0.deviceUid.unicodeScalars.contains("\0") }
        var found = try await store.healthProjectionInputs(tenant: principal.tenant, keys: storable).makeIterator()
        let inputs = body.keys.map { $0.deviceUid.unicodeScalars.contains("\0") ? [] : found.next() ?? [] }
        let computedAt = clock().nanoseconds
        let projections = zip(body.keys, inputs).map { HealthRollupCalculation.rollup($0, $1, computedAt: computedAt) }
        return try JSONResponse.make(HealthProjectionsResponse(projections: projections))
    }

    /// The schema's rules for `HealthProjectionKey` and the request's length.
    static func validate(_ keys: [HealthProjectionKey]) throws {
        func malformed(_ detail: String) -> HTTPProblem { HTTPProblem(Problem(.malformedRequest, detail: detail)) }
        guard !keys.isEmpty else { throw malformed("keys must name at least one key") }
        let limit = HealthProjection.maximumKeysPerRequest
        guard keys.count <= limit else {
            throw HTTPProblem(Problem(.batchTooLong, detail: "\(keys.count) keys; one request may carry at most \(limit)", maxCommands: limit))
        }
        for (index, key) in keys.enumerated() {
            guard (1...128).contains(key.deviceUid.unicodeScalars.count) else { throw malformed("keys[\(index)].device_uid must hold 1 to 128 characters") }
            if let user = key.userIndex, !(0...255).contains(user) { throw malformed("keys[\(index)].user_index must be 0 to 255 or null") }
            guard (1...4_294_967_295).contains(key.metricCode) else { throw malformed("keys[\(index)].metric_code must be 1 to 4294967295") }
            guard HealthProjectionDay(text: key.day) != nil else { throw malformed("keys[\(index)].day must be a date, YYYY-MM-DD") }
        }
    }
}
