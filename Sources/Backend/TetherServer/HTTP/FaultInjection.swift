import Foundation
import Hummingbird
import NIOCore
import Synchronization
import SyncContract
import TetherPrimitives

/// A failure the server plays instead of (or around) a real answer. For tests, the benchmark and the conformance
/// run only: a server started without a `FaultInjector` never consults one.
public enum Fault: Hashable, Sendable, CustomStringConvertible {
    /// Answer with this status and a problem, without running the handler (500, 502, 503, 429, …).
    case status(Int, retryAfterSeconds: Int? = nil)
    /// Wait, then handle normally: a slow server.
    case delay(Duration)
    /// Close the connection without running the handler: the request never took effect.
    case dropBeforeHandling
    /// Run the handler (its transaction commits), then close the connection instead of answering: the request
    /// took effect but the client cannot know.
    case dropAfterHandling
    /// Run the handler, then answer 500 instead of its response.
    case statusAfterHandling(Int)

    public var description: String {
        switch self {
        case .status(let code, let retryAfter): "status \(code)" + (retryAfter.map { " retry-after \($0)s" } ?? "")
        case .delay(let duration): "delay \(duration)"
        case .dropBeforeHandling: "drop before handling"
        case .dropAfterHandling: "drop after handling"
        case .statusAfterHandling(let code): "status \(code) after handling"
        }
    }

    /// `500`, `503:2` (Retry-After 2 s), `429:1`, `delay:250ms`, `delay:2s`, `drop`, `drop-after`, `500-after`.
    public init?(spec: String) {
        let parts = spec.split(separator: ":", maxSplits: 1).map(String.init)
        switch parts.first {
        case "drop": self = .dropBeforeHandling
        case "drop-after": self = .dropAfterHandling
        case "delay":
            guard parts.count == 2, let duration = Self.duration(parts[1]) else { return nil }
            self = .delay(duration)
        case let code? where code.hasSuffix("-after"):
            guard let status = Int(code.dropLast(6)), (400...599).contains(status) else { return nil }
            self = .statusAfterHandling(status)
        case let code?:
            guard let status = Int(code), (400...599).contains(status) else { return nil }
            let retryAfter = parts.count == 2 ? Int(parts[1]) : nil
            if parts.count == 2 && retryAfter == nil { return nil }
            self = .status(status, retryAfterSeconds: retryAfter)
        case nil: return nil
        }
    }

    private static func duration(_ text: String) -> Duration? {
        if text.hasSuffix("ms"), let value = Int64(text.dropLast(2)) { return .milliseconds(value) }
        if text.hasSuffix("s"), let value = Int64(text.dropLast(1)) { return .seconds(value) }
        return nil
    }
}

/// Which requests a fault may hit.
public enum FaultScope: Hashable, Sendable {
    case any
    case push
    case changes
    case settings
    /// Both health upload endpoints.
    case health

    func matches(path: String) -> Bool {
        switch self {
        case .any: path.hasPrefix(SyncAPI.versionPrefix + "/")
        case .push: path == SyncAPI.pushPath
        case .changes: path == SyncAPI.changesPath
        case .settings: path.hasPrefix("/v1/devices/")
        case .health: path == HealthUpload.samplesPath || path == HealthUpload.deletionsPath
        }
    }
}

/// Plays faults to requests: queued ones first (each hits one matching request, in order), then, if a rate is
/// set, random ones from a seeded generator. Counts what it did, so tests can assert the faults were met.
public final class FaultInjector: Sendable {
    private struct State {
        var queue: [(fault: Fault, scope: FaultScope)] = []
        var random: SplitMix64
        var rate: Double
        var palette: [Fault]
        var injected: [Fault] = []
    }

    private let state: Mutex<State>

    /// - Parameters:
    ///   - rate: the share of requests (0…1) that get a random fault from `palette` once the queue is empty.
    public init(rate: Double = 0, palette: [Fault] = [], seed: UInt64 = 1) {
        state = Mutex(State(random: SplitMix64(seed: seed), rate: rate, palette: palette))
    }

    /// Queues `fault` for the next `count` requests in `scope`.
    public func enqueue(_ fault: Fault, count: Int = 1, scope: FaultScope = .any) {
        state.withLock { state in
            for _ in 0..<count { state.queue.append((fault, scope)) }
        }
    }

    /// Switches random faults on or off.
    public func setRandom(rate: Double, palette: [Fault]) {
        state.withLock { state in
            state.rate = rate
            state.palette = palette
        }
    }

    /// Every fault played so far, in order.
    public var injected: [Fault] { state.withLock { $0.injected } }

    public var pending: Int { state.withLock { $0.queue.count } }

    func next(forPath path: String) -> Fault? {
        state.withLock { state in
            if let index = state.queue.firstIndex(where: { $0.scope.matches(path: path) }) {
                let fault = state.queue.remove(at: index).fault
                state.injected.append(fault)
                return fault
            }
            guard state.rate > 0, !state.palette.isEmpty, FaultScope.any.matches(path: path) else { return nil }
            let draw = Double(state.random.next() >> 11) / Double(1 << 53)
            guard draw < state.rate else { return nil }
            let fault = state.palette[Int(state.random.next() % UInt64(state.palette.count))]
            state.injected.append(fault)
            return fault
        }
    }
}

/// Plays the injector's faults. Sits inside `ProblemMiddleware` and outside authentication, as a proxy or an
/// overloaded server would.
struct FaultMiddleware: RouterMiddleware {
    typealias Context = SyncRequestContext
    let injector: FaultInjector

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let fault = injector.next(forPath: request.uri.path) else { return try await next(request, context) }
        context.logger.notice("injecting fault", metadata: ["fault": "\(fault)", "path": "\(request.uri.path)"])
        switch fault {
        case .status(let code, let retryAfter):
            throw Self.problem(code, retryAfter: retryAfter)
        case .delay(let duration):
            try await Task.sleep(for: duration)
            return try await next(request, context)
        case .dropBeforeHandling:
            return Self.droppedConnection()
        case .dropAfterHandling:
            _ = try await next(request, context)
            return Self.droppedConnection()
        case .statusAfterHandling(let code):
            _ = try await next(request, context)
            throw Self.problem(code, retryAfter: nil)
        }
    }

    static func problem(_ code: Int, retryAfter: Int?) -> HTTPProblem {
        let type: ProblemType =
            switch code {
            case 429: .rateLimited
            case 502, 503, 504: .unavailable
            default: .internalError
            }
        var headers = HTTPFields()
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return HTTPProblem(Problem(type, status: code, detail: "injected fault", retryAfterSeconds: retryAfter), headers: headers)
    }

    /// A response whose body fails before its first byte: the server closes the connection mid-response.
    static func droppedConnection() -> Response {
        Response(status: .ok, headers: [.contentType: SyncAPI.jsonMediaType], body: ResponseBody(contentLength: 1024) { _ in throw DroppedConnection() })
    }

    struct DroppedConnection: Error {}
}
