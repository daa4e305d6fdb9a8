import Foundation

/// How a gateway reaches its backend and how hard it pushes.
public struct SyncConfiguration: Sendable {
    /// `http://host:port` or `https://host:port`, without a trailing slash or path.
    public var baseURL: String
    public var token: BearerToken
    /// PEM file of the certificate authorities to trust for HTTPS (instead of the system's).
    public var caCertificatePath: String?

    /// Commands per push (the server may ask for fewer: `batch-too-long` carries its maximum).
    public var batchSize = 500
    /// Pushes in flight at once. Commands of one entity are never in two of them (the outbox's claim rule).
    public var pushConcurrency = 2
    /// Changes per pulled page.
    public var pageSize = 200

    /// A sync starts at least this often.
    public var interval: Duration = .seconds(60)
    /// After failures: exponential, full jitter, capped; a server's Retry-After is a floor.
    public var backoff = Backoff()
    /// A new local write starts a sync no sooner than this after the previous one (writes come in bursts).
    public var localWriteDebounce: Duration = .milliseconds(200)

    public var connectTimeout: Duration = .seconds(5)
    /// A whole request, from sending to the last byte of the answer.
    public var requestTimeout: Duration = .seconds(30)
    /// The largest answer read.
    public var maximumResponseBytes = 16 * 1024 * 1024
    /// Idle connections are kept for reuse this long.
    public var idleConnectionTimeout: Duration = .seconds(60)

    /// The `syncCursor` row holding the change feed's position.
    public var cursorName = "sync.changes"

    public init(baseURL: String, token: BearerToken) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.token = token
    }
}

/// A bearer token that never shows itself: `description` and `debugDescription` are redacted, so a logged
/// configuration or error cannot leak it.
public struct BearerToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    let value: String

    public init(_ value: String) {
        self.value = value.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Reads a token file (as `tether-server token create --output` writes it), refusing one that others can read.
    public init(contentsOfFile path: String) throws {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        if let permissions = attributes[.posixPermissions] as? NSNumber, permissions.intValue & 0o077 != 0 {
            throw SyncFailure(.configuration, "token file \(path) is readable by others (mode \(String(permissions.intValue, radix: 8))); chmod 600 it")
        }
        self.init(try String(contentsOfFile: path, encoding: .utf8))
    }

    public var description: String { "<redacted token>" }
    public var debugDescription: String { description }
}
