import Foundation
import Hummingbird
import NIOCore
import SyncContract

/// `GET /v1/health/export` (docs/specs/sync-api.yaml, "Health export"): the token's tenant's undeleted samples as
/// a FHIR R4 transaction Bundle (`FHIRExport`), a page at a time (`HealthExportQuery`, read by the store with the
/// page's bounds in its query); the bundle's `next` link names the following page.
struct HealthExportRoute {
    static let path = "/v1/health/export"

    let store: any ServerStore

    func handle(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let parameters = request.uri.queryParameters
        let query = try Self.query { parameters[Substring($0)].map(String.init) }
        let page = try await store.healthExportPage(tenant: principal.tenant, query: query)
        let next = page.next.map { next in
            var link = "\(Self.path)?since=\(next.since)&after=\(next.after)&limit=\(query.limit)"
            if let until = query.until { link += "&until=\(until)" }
            return link
        }
        let body = FHIRExport.bundle(page.rows, next: next).serialized
        var headers = HTTPFields()
        headers[.contentType] = FHIRExport.mediaType
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// The query from the request's parameters (`parameter(name)` is a parameter's text, `nil` when absent).
    static func query(_ parameter: (String) -> String?) throws -> HealthExportQuery {
        func integer(_ name: String, _ range: ClosedRange<Int64>, _ problem: ProblemType) throws -> Int64? {
            guard let text = parameter(name) else { return nil }
            guard let value = Int64(text), range.contains(value) else {
                throw HTTPProblem(Problem(problem, detail: "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)"))
            }
            return value
        }
        let since = try integer("since", Int64.min...Int64.max, .malformedRequest)
        let until = try integer("until", Int64.min...Int64.max, .malformedRequest)
        let limit = try integer("limit", 1...Int64(HealthExportQuery.maximumLimit), .invalidLimit).map(Int.init) ?? HealthExportQuery.maximumLimit
        let after = parameter("after")
        if let after, after.utf8.count != 36 || UUID(uuidString: after) == nil {
            throw HTTPProblem(Problem(.malformedRequest, detail: "after must be a sample uid (a UUID)"))
        }
        // `after` refines `since` (the next link gives both); alone it names no position and is ignored. Stored uids are
        // lowercase (HealthUploadPlanner), and pages compare them byte by byte.
        return HealthExportQuery(since: since, until: until, after: since == nil ? nil : after?.lowercased(), limit: limit)
    }
}
