import Hummingbird
import SyncContract

/// `POST /v1/commands`: one batch of outbox commands, applied in one transaction, one result per command.
struct PushRoute {
    let store: any ServerStore
    let limits: ServerLimits

    func handle(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let push = try await JSONRequestBody.read(PushRequest.self, from: request, limit: limits.maximumRequestBytes)
        guard push.commands.count <= limits.maximumCommandsPerPush else {
            throw HTTPProblem(
                Problem(
                    .batchTooLong, detail: "\(push.commands.count) commands; a push may carry at most \(limits.maximumCommandsPerPush)",
                    maxCommands: limits.maximumCommandsPerPush))
        }
        let results = try await store.push(push.commands, by: principal)
        return try JSONResponse.make(PushResponse(results: results))
    }
}
