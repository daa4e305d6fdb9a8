import Hummingbird
import SyncContract

/// `GET` and `PUT /v1/devices/{serial}/settings`, with the settings version as a strong ETag. GET honours
/// If-None-Match (304); PUT requires If-Match (428 without it, 412 when the version moved on).
struct SettingsRoute {
    let store: any ServerStore
    let limits: ServerLimits

    func get(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let serial = try Self.serial(context)
        guard let resource = try await store.settings(tenant: principal.tenant, serial: serial) else { throw Self.notFound(serial) }
        var headers = HTTPFields()
        headers[.eTag] = EntityTag.make(version: resource.version)
        if let field = request.headers[.ifNoneMatch] {
            let versions = EntityTag.versions(in: field)
            if versions == nil || versions!.contains(resource.version) {
                headers[.cacheControl] = "no-store"
                return Response(status: .notModified, headers: headers)
            }
        }
        return try JSONResponse.make(resource, headers: headers)
    }

    func put(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let serial = try Self.serial(context)
        guard let field = request.headers[.ifMatch] else {
            throw HTTPProblem(Problem(.preconditionRequired, detail: "GET the settings and send their ETag in If-Match"))
        }
        let update = try await JSONRequestBody.read(DesiredSettingsUpdate.self, from: request, limit: limits.maximumRequestBytes)
        if let problem = update.desired.problem { throw HTTPProblem(Problem(.invalidSettings, detail: problem)) }
        let outcome = try await store.replaceDesiredSettings(
            tenant: principal.tenant, serial: serial, desired: update.desired, author: .technician, origin: principal.gateway,
            ifMatch: EntityTag.versions(in: field))
        switch outcome {
        case .updated(let resource):
            var headers = HTTPFields()
            headers[.eTag] = EntityTag.make(version: resource.version)
            return try JSONResponse.make(resource, headers: headers)
        case .noSuchDevice:
            throw Self.notFound(serial)
        case .versionMismatch(let current):
            var headers = HTTPFields()
            headers[.eTag] = EntityTag.make(version: current)
            throw HTTPProblem(
                Problem(.preconditionFailed, detail: "the settings are at version \(current)", currentVersion: current), headers: headers)
        }
    }

    private static func serial(_ context: SyncRequestContext) throws -> String {
        guard let raw = context.parameters.get("serial"), let serial = PathSegment.decode(raw), EntityIdentity.isValidSerial(serial) else {
            throw HTTPProblem(Problem(.notFound, detail: "the path does not name a valid device serial"))
        }
        return serial
    }

    private static func notFound(_ serial: String) -> HTTPProblem {
        HTTPProblem(Problem(.notFound, detail: "no device \(serial) in this gateway's tenant"))
    }
}
