/// An RFC 9457 problem detail (`application/problem+json`), with the extension members docs/specs/sync-api.yaml
/// defines. `type` is one of `ProblemType`'s URIs; clients branch on it, never on `title` or `detail`.
public struct Problem: Codable, Hashable, Sendable, Error, CustomStringConvertible {
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String?
    public var instance: String?
    /// `batch-too-long`: the most commands one push may carry.
    public var maxCommands: Int?
    /// `request-too-large`: the most bytes one request body may carry.
    public var maxBytes: Int?
    /// `precondition-failed`: the settings version the server holds now.
    public var currentVersion: Int64?
    /// `rate-limited`, `unavailable`: seconds to wait (also in the Retry-After header).
    public var retryAfterSeconds: Int?

    public init(
        _ type: ProblemType, status: Int? = nil, detail: String? = nil, instance: String? = nil, maxCommands: Int? = nil, maxBytes: Int? = nil,
        currentVersion: Int64? = nil, retryAfterSeconds: Int? = nil
    ) {
        self.type = type.uri
        self.title = type.title
        self.status = status ?? type.status
        self.detail = detail
        self.instance = instance
        self.maxCommands = maxCommands
        self.maxBytes = maxBytes
        self.currentVersion = currentVersion
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var problemType: ProblemType? { ProblemType(uri: type) }

    public var description: String {
        "\(status) \(title)" + (detail.map { ": \($0)" } ?? "")
    }

    enum CodingKeys: String, CodingKey {
        case type
        case title
        case status
        case detail
        case instance
        case maxCommands = "max_commands"
        case maxBytes = "max_bytes"
        case currentVersion = "current_version"
        case retryAfterSeconds = "retry_after_seconds"
    }
}

/// The problem types of docs/specs/sync-api.yaml, each with its status and title.
public enum ProblemType: String, CaseIterable, Hashable, Sendable {
    case malformedRequest = "malformed-request"
    case batchTooLong = "batch-too-long"
    case requestTooLarge = "request-too-large"
    case unsupportedMediaType = "unsupported-media-type"
    case invalidCursor = "invalid-cursor"
    case invalidLimit = "invalid-limit"
    case cursorAhead = "cursor-ahead"
    case unauthorized = "unauthorized"
    case notFound = "not-found"
    case methodNotAllowed = "method-not-allowed"
    case notAcceptable = "not-acceptable"
    case preconditionRequired = "precondition-required"
    case preconditionFailed = "precondition-failed"
    case invalidSettings = "invalid-settings"
    case rateLimited = "rate-limited"
    case unavailable = "unavailable"
    case internalError = "internal-error"

    public static let uriPrefix = "urn:tether:problem:"

    public var uri: String { Self.uriPrefix + rawValue }

    public init?(uri: String) {
        guard uri.hasPrefix(Self.uriPrefix) else { return nil }
        self.init(rawValue: String(uri.dropFirst(Self.uriPrefix.count)))
    }

    public var status: Int {
        switch self {
        case .malformedRequest, .batchTooLong, .invalidCursor, .invalidLimit: 400
        case .unauthorized: 401
        case .notFound: 404
        case .methodNotAllowed: 405
        case .notAcceptable: 406
        case .cursorAhead: 409
        case .preconditionFailed: 412
        case .requestTooLarge: 413
        case .unsupportedMediaType: 415
        case .invalidSettings: 422
        case .preconditionRequired: 428
        case .rateLimited: 429
        case .internalError: 500
        case .unavailable: 503
        }
    }

    public var title: String {
        switch self {
        case .malformedRequest: "The request body does not match the API"
        case .batchTooLong: "Too many commands in one push"
        case .requestTooLarge: "The request body is too large"
        case .unsupportedMediaType: "The request body must be application/json"
        case .invalidCursor: "The cursor was not issued by this server"
        case .invalidLimit: "The page size is out of range"
        case .cursorAhead: "The cursor is ahead of the server's feed"
        case .unauthorized: "A valid gateway bearer token is required"
        case .notFound: "No such resource"
        case .methodNotAllowed: "Method not allowed on this resource"
        case .notAcceptable: "The response can only be application/json"
        case .preconditionRequired: "If-Match is required to change settings"
        case .preconditionFailed: "The settings changed since the given ETag"
        case .invalidSettings: "The settings are not valid"
        case .rateLimited: "Too many requests"
        case .unavailable: "The server is unavailable"
        case .internalError: "The server failed to process the request"
        }
    }
}
