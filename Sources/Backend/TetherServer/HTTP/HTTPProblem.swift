import Foundation
import Hummingbird
import NIOCore
import SyncContract

/// A problem to answer with, and the headers its status calls for (WWW-Authenticate, Retry-After, Allow, ETag).
/// Handlers and middleware throw it; `ProblemMiddleware` writes it as `application/problem+json`.
public struct HTTPProblem: Error, Sendable {
    public var problem: Problem
    public var headers: HTTPFields

    public init(_ problem: Problem, headers: HTTPFields = [:]) {
        self.problem = problem
        self.headers = headers
    }

    public func response() -> Response {
        var headers = headers
        headers[.contentType] = SyncAPI.problemMediaType
        headers[.cacheControl] = "no-store"
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let body = (try? encoder.encode(problem)) ?? Data(#"{"type":"about:blank","title":"Error","status":500}"#.utf8)
        return Response(
            status: HTTPResponse.Status(code: problem.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// JSON responses of the API.
enum JSONResponse {
    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var headers = headers
        headers[.contentType] = SyncAPI.jsonMediaType
        headers[.cacheControl] = "no-store"
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let body = try encoder.encode(value)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
