import Hummingbird
import SyncContract

/// The per-request context: Hummingbird's core storage plus the gateway the bearer token proved, set by
/// `AuthMiddleware` before any handler of the API runs.
public struct SyncRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var principal: GatewayPrincipal?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    /// Handlers collect bodies themselves against `ServerLimits`; this bound only covers Hummingbird's decoders.
    public var maxUploadSize: Int { SyncAPI.Defaults.maximumRequestBytes }

    /// The verified principal; a handler behind `AuthMiddleware` never sees `nil`.
    func requirePrincipal() throws -> GatewayPrincipal {
        guard let principal else { throw HTTPProblem(Problem(.unauthorized, detail: "no verified gateway for this request")) }
        return principal
    }
}
