import LinkProtocol
import TetherSettings

/// What the gateway concluded from a transcript: the rows it stored and the frames it answered with. Encoded as
/// JSON (sorted keys) for `--json` and the fixtures' expected-outcome files; rendered as tables for people.
public struct ReplayOutcome: Codable, Hashable, Sendable {
    public struct Device: Codable, Hashable, Sendable {
        public var serial: String
        public var firmware: String
        public var hardwareRevision: Int
        public var bootCounter: Int
        public var negotiatedVersion: Int
    }

    public struct Event: Codable, Hashable, Sendable {
        public var boot: Int
        public var sequence: Int64
        public var ticks: Int64
        /// Derived wall-clock time, `nil` while the boot has no anchor (§9.7).
        public var utc: String?
        public var uncertaintyMilliseconds: Double?
        public var durationMilliseconds: Int
        public var intensity: Int
    }

    public struct Anchor: Codable, Hashable, Sendable {
        public var boot: Int
        public var deviceMilliseconds: Double
        public var utc: String
        public var uncertaintyMilliseconds: Double
        public var roundTripMilliseconds: Double
    }

    public struct NackRow: Codable, Hashable, Sendable {
        /// Seconds since the transcript's start.
        public var at: String
        public var sequence: Int
        public var reason: String
    }

    public struct Rejection: Codable, Hashable, Sendable {
        public var at: String
        public var code: String
        public var sequence: Int?
        public var reason: String
    }

    public struct Reboot: Codable, Hashable, Sendable {
        public var at: String
        public var previousBoot: Int?
        public var boot: Int
    }

    public var transcript: String
    public var firmware: String
    public var device: Device?
    public var connections = 0
    public var events: [Event] = []
    public var anchors: [Anchor] = []
    public var acksSent = 0
    public var nacksSent: [NackRow] = []
    public var nacksReceived: [NackRow] = []
    /// Events seen again (by identity, §8.8) and not stored twice.
    public var duplicateEvents = 0
    /// Reliable frames that arrived again after they were handled, and were re-ACKed.
    public var repeatedFrames = 0
    public var rejected: [Rejection] = []
    public var reboots: [Reboot] = []
    public var gatewayDisconnects: [String] = []
    public var timeSyncLost = 0
    public var battery: String?
    public var reportedConfigVersion: Int?
    public var reportedSettings: DeviceSettings?
    public var sleeps: [String] = []
    public var storageRefusals = 0

    public init(transcript: String, firmware: String) {
        self.transcript = transcript
        self.firmware = firmware
    }

    static func milliseconds(_ nanoseconds: Int64) -> Double { (Double(nanoseconds) / 1000).rounded() / 1000 }
}
