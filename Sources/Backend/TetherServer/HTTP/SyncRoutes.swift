import HTTPTypes
import Hummingbird
import SyncContract
import TetherPrimitives

/// The API's routes (docs/specs/sync-api.yaml) and the middleware in front of them, outermost first: problems,
/// faults (when injected), authentication.
enum SyncRoutes {
    static func router(store: any ServerStore, limits: ServerLimits, faults: FaultInjector?) -> Router<SyncRequestContext> {
        let router = Router(context: SyncRequestContext.self)
        router.add(middleware: ProblemMiddleware())
        if let faults { router.add(middleware: FaultMiddleware(injector: faults)) }
        router.add(middleware: AuthMiddleware(store: store))
        let push = PushRoute(store: store, limits: limits)
        let changes = ChangesRoute(store: store, limits: limits)
        let settings = SettingsRoute(store: store, limits: limits)
        router.post(RouterPath(SyncAPI.pushPath)) { request, context in try await push.handle(request, context: context) }
        router.get(RouterPath(SyncAPI.changesPath)) { request, context in try await changes.handle(request, context: context) }
        router.get("/v1/devices/:serial/settings") { request, context in try await settings.get(request, context: context) }
        router.put("/v1/devices/:serial/settings") { request, context in try await settings.put(request, context: context) }
        let health = HealthUploadRoute(store: store, limits: limits, clock: WallClock.now)
        router.post(RouterPath(HealthUpload.samplesPath)) { request, context in try await health.samples(request, context: context) }
        router.post(RouterPath(HealthUpload.deletionsPath)) { request, context in try await health.deletions(request, context: context) }
        let projections = HealthProjectionRoute(store: store, limits: limits, clock: WallClock.now)
        router.post(RouterPath(HealthProjection.path)) { request, context in try await projections.handle(request, context: context) }
        let export = HealthExportRoute(store: store)
        router.get(RouterPath(HealthExportRoute.path)) { request, context in try await export.handle(request, context: context) }
        return router
    }

    /// The methods a path supports, `nil` when no route has the path (a 404 rather than a 405).
    static func allowedMethods(forPath path: String) -> [HTTPRequest.Method]? {
        if path == SyncAPI.pushPath { return [.post] }
        if path == SyncAPI.changesPath { return [.get] }
        if path == HealthUpload.samplesPath || path == HealthUpload.deletionsPath || path == HealthProjection.path { return [.post] }
        if path == HealthExportRoute.path { return [.get] }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 5, parts[0].isEmpty, parts[1] == "v1", parts[2] == "devices", !parts[3].isEmpty, parts[4] == "settings" {
            return [.get, .put]
        }
        return nil
    }
}
