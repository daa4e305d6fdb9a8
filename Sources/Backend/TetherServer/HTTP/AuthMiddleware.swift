import Foundation
import Hummingbird
import SyncContract

/// Bearer-token authentication (RFC 6750) for every route. The token names its stored row by id; the secret's
/// SHA-256 is compared with the stored hash in constant time. Unknown ids, bad secrets and revoked tokens get
/// the same 401, so the answer does not tell which part was wrong. The token is never logged.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = SyncRequestContext
    let store: any ServerStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let field = request.headers[.authorization] else {
            throw Self.unauthorized(detail: "send Authorization: Bearer <gateway token>", error: nil)
        }
        let parts = field.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw Self.unauthorized(detail: "the Authorization scheme must be Bearer", error: "invalid_request")
        }
        guard let presented = GatewayToken(presented: parts[1].trimmingCharacters(in: .whitespaces)),
            let record = try await store.token(id: presented.id),
            presented.matches(storedHash: record.secretHash),
            record.revokedAt == nil
        else {
            throw Self.unauthorized(detail: "the token is not valid", error: "invalid_token")
        }
        var context = context
        context.principal = GatewayPrincipal(tenant: record.tenant, gateway: record.gateway, tokenID: record.id)
        context.logger[metadataKey: "gateway"] = "\(record.tenant)/\(record.gateway)"
        return try await next(request, context)
    }

    static func unauthorized(detail: String, error: String?) -> HTTPProblem {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = "Bearer realm=\"tether\"" + (error.map { ", error=\"\($0)\"" } ?? "")
        return HTTPProblem(Problem(.unauthorized, detail: detail), headers: headers)
    }
}
