import Hummingbird
import SyncContract

/// `GET /v1/changes?after=&limit=`: a page of the tenant's change feed after the cursor, without the changes this
/// gateway's own pushes caused. The next cursor is the last sequence scanned (own changes included), so it never
/// moves backward and a page of only own changes still advances it.
struct ChangesRoute {
    let store: any ServerStore
    let limits: ServerLimits

    func handle(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let query = request.uri.queryParameters
        var cursor = SyncCursor.start
        if let token = query[Substring(SyncAPI.Query.after)] {
            guard let parsed = SyncCursor(token: String(token)) else {
                throw HTTPProblem(Problem(.invalidCursor, detail: "start without `after`, then pass the previous page's next_cursor"))
            }
            cursor = parsed
        }
        var limit = limits.defaultPageLimit
        if let text = query[Substring(SyncAPI.Query.limit)] {
            guard let value = Int(text), (1...limits.maximumPageLimit).contains(value) else {
                throw HTTPProblem(Problem(.invalidLimit, detail: "limit must be an integer from 1 to \(limits.maximumPageLimit)"))
            }
            limit = value
        }
        let slice = try await store.feed(tenant: principal.tenant, after: cursor.sequence, limit: limit + 1)
        guard cursor.sequence <= slice.head else {
            throw HTTPProblem(
                Problem(.cursorAhead, detail: "the feed ends at \(SyncCursor(sequence: slice.head).token); the server's data is older than the cursor"))
        }
        let scanned = slice.entries.prefix(limit)
        let next = SyncCursor(sequence: scanned.last?.sequence ?? cursor.sequence)
        let changes = scanned.filter { $0.origin != principal.gateway }.map(\.change)
        return try JSONResponse.make(ChangePage(changes: changes, nextCursor: next, hasMore: slice.entries.count > limit))
    }
}
