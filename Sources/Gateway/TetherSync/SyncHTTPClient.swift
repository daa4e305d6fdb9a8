import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import SyncContract

/// The sync API over AsyncHTTPClient: one client per engine, so connections are kept and reused; timeouts on
/// connecting and on whole requests; HTTPS with the system's or a configured CA. Every failure comes out as a
/// `SyncFailure` of the right kind, and every answer reports the server's Date for the clock-skew estimate.
public final class SyncHTTPClient: Sendable {
    private let client: HTTPClient
    private let configuration: SyncConfiguration

    public init(configuration: SyncConfiguration) throws {
        self.configuration = configuration
        guard let url = URL(string: configuration.baseURL), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw SyncFailure(.configuration, "the backend URL must be http(s)://host[:port], not \(configuration.baseURL)")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let path = configuration.caCertificatePath {
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(path))
            } catch {
                throw SyncFailure(.configuration, "cannot read the CA certificates in \(path): \(error)")
            }
        }
        var httpConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            timeout: .init(connect: .nanoseconds(configuration.connectTimeout.nanoseconds), read: .nanoseconds(configuration.requestTimeout.nanoseconds)),
            connectionPool: .init(
                idleTimeout: .nanoseconds(configuration.idleConnectionTimeout.nanoseconds),
                concurrentHTTP1ConnectionsPerHostSoftLimit: max(2, configuration.pushConcurrency + 1)))
        httpConfiguration.redirectConfiguration = .disallow
        httpConfiguration.httpVersion = .http1Only
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfiguration)
    }

    /// Closes the pooled connections. Call once, when the engine stops.
    public func shutdown() async {
        guard !isShutDown.withLock({ let was = $0; $0 = true; return was }) else { return }
        try? await client.shutdown()
    }

    private let isShutDown = Mutex(false)

    deinit {
        // A forgotten shutdown() must not leak the connections: the client stays alive until it has closed them.
        if !isShutDown.withLock({ $0 }) { client.shutdown { _ in } }
    }

    /// An answer and what it says about the clocks.
    public struct Answer<Body: Sendable>: Sendable {
        public var body: Body
        public var status: Int
        public var headers: [(String, String)]
        public var skew: ClockSkew.Sample?
    }

    // MARK: - Endpoints

    /// `POST /v1/commands` with a body from `PushRequestWriter`.
    public func push(body: [UInt8], commandCount: Int) async throws(SyncFailure) -> Answer<PushResponse> {
        let answer = try await send(.POST, path: SyncAPI.pushPath, body: body)
        let response: PushResponse = try decode(answer)
        guard response.results.count == commandCount else {
            throw SyncFailure(.protocolViolation, "the server answered \(response.results.count) results for \(commandCount) commands")
        }
        return Answer(body: response, status: answer.status, headers: answer.headers, skew: answer.skew)
    }

    /// `GET /v1/changes`.
    public func changes(after cursor: SyncCursor?, limit: Int) async throws(SyncFailure) -> Answer<ChangePage> {
        var path = SyncAPI.changesPath + "?\(SyncAPI.Query.limit)=\(limit)"
        if let cursor { path += "&\(SyncAPI.Query.after)=\(cursor.token)" }
        let answer = try await send(.GET, path: path, body: nil)
        return Answer(body: try decode(answer), status: answer.status, headers: answer.headers, skew: answer.skew)
    }

    /// `GET /v1/devices/{serial}/settings`; `nil` body for 304 (the ETag still matches) and 404 (no such device).
    public func settings(serial: String, ifNoneMatch version: Int64?) async throws(SyncFailure) -> Answer<DeviceSettingsResource?> {
        var headers: [(String, String)] = []
        if let version { headers.append(("If-None-Match", EntityTag.make(version: version))) }
        let answer = try await send(.GET, path: SyncAPI.settingsPath(serial: serial), body: nil, headers: headers, passing: [304, 404])
        let body: DeviceSettingsResource? = answer.status == 200 ? try decode(answer) : nil
        return Answer(body: body, status: answer.status, headers: answer.headers, skew: answer.skew)
    }

    /// `POST /v1/health/samples` or `/v1/health/deletions` (issue 15) with an encoded `HealthSamplesRequest` or
    /// `HealthDeletionsRequest`. The caller checks the results against what it sent (`HealthUploadRules`).
    public func uploadHealth(path: String, body: [UInt8]) async throws(SyncFailure) -> Answer<HealthUploadResponse> {
        let answer = try await send(.POST, path: path, body: body)
        return Answer(body: try decode(answer), status: answer.status, headers: answer.headers, skew: answer.skew)
    }

    /// `POST /v1/health/projections` (issue 15) with an encoded `HealthProjectionsRequest`. The caller checks that the
    /// answer names the keys it asked, in order (`HealthProjectionPuller`).
    public func healthProjections(body: [UInt8]) async throws(SyncFailure) -> Answer<HealthProjectionsResponse> {
        let answer = try await send(.POST, path: HealthProjection.path, body: body)
        return Answer(body: try decode(answer), status: answer.status, headers: answer.headers, skew: answer.skew)
    }

    // MARK: - Transport

    private func send(
        _ method: HTTPMethod, path: String, body: [UInt8]?, headers extra: [(String, String)] = [], passing: Set<Int> = []
    ) async throws(SyncFailure) -> Answer<ByteBuffer> {
        var request = HTTPClientRequest(url: configuration.baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(configuration.token.value)")
        request.headers.add(name: "Accept", value: "application/json, application/problem+json")
        request.headers.add(name: "User-Agent", value: "tether-gateway-sync/1")
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: SyncAPI.jsonMediaType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let sentAt = Date()
        let started = ContinuousClock.now
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await client.execute(request, timeout: .nanoseconds(configuration.requestTimeout.nanoseconds))
            bytes = try await response.body.collect(upTo: configuration.maximumResponseBytes)
        } catch {
            throw Self.classify(error)
        }
        let roundTrip = started.duration(to: .now)
        let skew = response.headers.first(name: "Date").flatMap { ClockSkew.sample(serverDate: $0, requestSentAt: sentAt, roundTrip: roundTrip) }
        let status = Int(response.status.code)
        let headers = response.headers.map { ($0.name, $0.value) }
        let answer = Answer(body: bytes, status: status, headers: headers, skew: skew)
        guard (200..<300).contains(status) || passing.contains(status) else {
            throw Self.failure(status: status, headers: response.headers, body: bytes)
        }
        return answer
    }

    private func decode<T: Decodable>(_ answer: Answer<ByteBuffer>) throws(SyncFailure) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(answer.body.readableBytesView))
        } catch {
            throw SyncFailure(.protocolViolation, "the server's \(T.self) does not match the API: \(DecodingErrorText.describe(error))", status: answer.status)
        }
    }

    /// RFC 9457 problems and status codes to failure kinds (docs/specs/sync-api.yaml, "Errors").
    static func failure(status: Int, headers: HTTPHeaders, body: ByteBuffer) -> SyncFailure {
        let problem = try? JSONDecoder().decode(Problem.self, from: Data(body.readableBytesView))
        let retryAfter = headers.first(name: "Retry-After").flatMap(RetryAfter.parse)
        let reason = problem.map { "\($0.title)" + ($0.detail.map { ": \($0)" } ?? "") } ?? "HTTP \(status)"
        let kind: SyncFailure.Kind =
            switch status {
            case 401: .unauthorized
            case 409 where problem?.problemType == .cursorAhead: .cursorAhead
            case 429: .rateLimited
            case 502, 503, 504: .unavailable
            case 500...599: .server
            case 400...499: .rejected
            default: .protocolViolation
            }
        return SyncFailure(kind, reason, status: status, problem: problem, retryAfter: retryAfter)
    }

    static func classify(_ error: any Error) -> SyncFailure {
        if let error = error as? SyncFailure { return error }
        if let error = error as? HTTPClientError {
            switch error {
            case .readTimeout, .connectTimeout, .deadlineExceeded, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout, .writeTimeout:
                return SyncFailure(.timeout, "\(error)")
            default:
                return SyncFailure(.network, "\(error)")
            }
        }
        if error is CancellationError { return SyncFailure(.network, "cancelled") }
        if error is NIOTooManyBytesError { return SyncFailure(.protocolViolation, "the answer exceeds the response size limit") }
        return SyncFailure(.network, "\(error)")
    }
}

/// Retry-After (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date.
enum RetryAfter {
    static func parse(_ value: String) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed), seconds >= 0 { return .seconds(seconds) }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return .milliseconds(max(0, Int64(date.timeIntervalSinceNow * 1000)))
    }
}

/// IMF-fixdate (RFC 9110 §5.6.7), the only form a server may send.
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}
