import Hummingbird
import Logging
import SyncContract
import TetherPrimitives

/// `POST /v1/health/samples` and `POST /v1/health/deletions` (docs/specs/sync-api.yaml, "Health"): one batch in one
/// transaction, one result per item in request order. The tenant is the token's (`AuthMiddleware`), never the
/// body's. A body that does not decode is 400 `malformed-request` and a batch over the limit 400 `batch-too-long`,
/// as for a push; an item that breaks a rule is `rejected` on its own.
struct HealthUploadRoute {
    let store: any ServerStore
    let limits: ServerLimits
    /// The server's instant for `stored_at`.
    let clock: @Sendable () -> Timestamp

    func samples(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let body = try await JSONRequestBody.read(HealthSamplesRequest.self, from: request, limit: limits.maximumRequestBytes)
        try Self.checkLength(body.samples.count, limit: limits.maximumHealthSamplesPerRequest, noun: "samples")
        context.logger.debug("health samples", metadata: ["upload_request_id": "\(body.uploadRequestId)", "count": "\(body.samples.count)"])
        let results = try await store.uploadHealthSamples(body.samples, by: principal, storedAt: clock().nanoseconds)
        return try JSONResponse.make(HealthUploadResponse(results: results))
    }

    func deletions(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let body = try await JSONRequestBody.read(HealthDeletionsRequest.self, from: request, limit: limits.maximumRequestBytes)
        try Self.checkLength(body.deletions.count, limit: limits.maximumHealthDeletionsPerRequest, noun: "deletions")
        context.logger.debug("health deletions", metadata: ["upload_request_id": "\(body.uploadRequestId)", "count": "\(body.deletions.count)"])
        let results = try await store.uploadHealthDeletions(body.deletions, by: principal, storedAt: clock().nanoseconds)
        return try JSONResponse.make(HealthUploadResponse(results: results))
    }

    /// The push's problem for a batch over the limit; `max_commands` carries the limit of this endpoint.
    private static func checkLength(_ count: Int, limit: Int, noun: String) throws {
        guard count <= limit else {
            throw HTTPProblem(Problem(.batchTooLong, detail: "\(count) \(noun); one request may carry at most \(limit)", maxCommands: limit))
        }
    }
}
