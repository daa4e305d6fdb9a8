import SyncContract

/// Why a sync (or one request of it) failed, classified by what the engine does next. Equal by kind; the reason
/// is for people and never contains the token.
public struct SyncFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        /// Connection refused, reset or dropped; DNS; TLS. Retried with backoff.
        case network
        /// No complete answer in time. Retried with backoff.
        case timeout
        /// 5xx other than 502/503/504: the server failed on this request. Retried with backoff; commands count an attempt.
        case server
        /// 502, 503, 504: the server is not taking requests. Retried after Retry-After or the backoff.
        case unavailable
        /// 429. Retried after Retry-After or the backoff.
        case rateLimited
        /// 401: the token is missing, wrong or revoked. Retried with backoff (an operator must fix the token).
        case unauthorized
        /// Another 4xx: the request can never succeed as sent.
        case rejected
        /// The server answered something that does not match docs/specs/sync-api.yaml.
        case protocolViolation
        /// The pulled data failed the integrity gate; the cursor stayed where it was.
        case integrity
        /// The server's feed ends before the gateway's cursor (its data was restored from an older backup).
        case cursorAhead
        /// The local store failed.
        case store
        /// The gateway's own settings are unusable (a bad URL, a token file others can read).
        case configuration
    }

    public var kind: Kind
    public var reason: String
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// The server's problem, when it sent one.
    public var problem: Problem?
    /// The server's Retry-After.
    public var retryAfter: Duration?

    public init(_ kind: Kind, _ reason: String, status: Int? = nil, problem: Problem? = nil, retryAfter: Duration? = nil) {
        self.kind = kind
        self.reason = reason
        self.status = status
        self.problem = problem
        self.retryAfter = retryAfter
    }

    /// Whether the link (not the commands) is at fault: commands sent in the failed request go back to the queue
    /// and are pushed again as soon as the link works, without counting against their attempts.
    public var isLinkFailure: Bool {
        switch kind {
        case .network, .timeout, .unavailable, .rateLimited, .unauthorized: true
        case .server, .rejected, .protocolViolation, .integrity, .cursorAhead, .store, .configuration: false
        }
    }

    public var description: String {
        "\(kind.rawValue)" + (status.map { " (HTTP \($0))" } ?? "") + ": \(reason)"
    }

    public static func == (a: Self, b: Self) -> Bool { a.kind == b.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }
}
