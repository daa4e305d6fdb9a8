import Foundation
import Hummingbird
import Logging
import NIOCore
import SyncContract

/// The outermost middleware: every error becomes an RFC 9457 problem, so no answer of this server is an empty
/// body or a framework's own error format. Unexpected errors are logged with an incident id and answered as an
/// opaque 500 that names it: the client learns nothing of the server's internals.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = SyncRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPProblem {
            return error.response()
        } catch let error as HTTPError {
            return Self.problem(for: error, request: request).response()
        } catch is NIOTooManyBytesError {
            return HTTPProblem(Problem(.requestTooLarge, detail: "the request body exceeds the server's limit")).response()
        } catch let error as StorageFull {
            // 503, not 500: the request may be retried as it is once the operator has made room (StorageFull).
            context.logger.error("storage full: request refused", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return Self.unavailable("the server's storage is full; nothing of this request was applied")
        } catch let error as StorageUnavailable {
            // 503 for the same reason: the database is the server's condition, not the request's fault.
            context.logger.error("storage unavailable: request refused", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return Self.unavailable("the server's database is not serving; retry later")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // An incident id of our own, logged with the error and given to the client, to find one in the other.
            // Not Hummingbird's `context.id`: it force-unwraps the request id from the logger's metadata, which a
            // logger that keeps no metadata (SwiftLogNoOpLogHandler, as the tests run quiet) returns as nil, so the
            // 500 path itself crashed the process.
            let incident = UUID().uuidString.lowercased()
            context.logger.error(
                "request failed",
                metadata: ["path": "\(request.uri.path)", "incident": "\(incident)", "error": "\(String(reflecting: error))"])
            return HTTPProblem(Problem(.internalError, detail: "incident \(incident)")).response()
        }
    }

    /// How long a gateway should wait before pushing to a server whose disk is full: room is made by an operator,
    /// not in milliseconds.
    static let storageFullRetryAfterSeconds = 30

    /// 503 `unavailable` with Retry-After (docs/specs/sync-api.yaml, "Unavailable"): the gateway sends the request
    /// again, unchanged and not counted against its commands.
    static func unavailable(_ detail: String) -> Response {
        var headers = HTTPFields()
        headers[.retryAfter] = String(storageFullRetryAfterSeconds)
        let problem = Problem(.unavailable, detail: detail, retryAfterSeconds: storageFullRetryAfterSeconds)
        return HTTPProblem(problem, headers: headers).response()
    }

    /// Hummingbird's own errors: an unmatched route is a 404, or a 405 with Allow when the path exists.
    static func problem(for error: HTTPError, request: Request) -> HTTPProblem {
        if error.status == .notFound, let allowed = SyncRoutes.allowedMethods(forPath: request.uri.path) {
            var headers = HTTPFields()
            headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            return HTTPProblem(Problem(.methodNotAllowed, detail: "\(request.method) is not allowed on \(request.uri.path)"), headers: headers)
        }
        switch error.status {
        case .notFound: return HTTPProblem(Problem(.notFound, detail: "no resource at \(request.uri.path)"))
        case .contentTooLarge: return HTTPProblem(Problem(.requestTooLarge, detail: error.body))
        case .badRequest: return HTTPProblem(Problem(.malformedRequest, detail: error.body))
        default:
            var problem = Problem(.internalError, status: error.status.code, detail: error.body)
            problem.title = error.status.reasonPhrase
            problem.type = "about:blank"
            return HTTPProblem(problem, headers: error.headers)
        }
    }
}
