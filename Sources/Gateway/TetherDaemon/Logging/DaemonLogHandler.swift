import Foundation
import Logging

/// swift-log to stderr, one line per record, shaped for journald.
///
/// Under systemd (`$JOURNAL_STREAM` set) each line starts with the syslog priority in angle brackets
/// (`<6>`), which journald turns into the entry's PRIORITY (SyslogLevelPrefix= defaults to yes) and strips; the
/// journal adds its own timestamps. Elsewhere the line starts with the level's name. Metadata follows the message
/// as `key=value`. Nothing here filters content: callers never pass tokens or personal data (the sync engine
/// logs token *files*, never tokens; devices are named by serial).
public struct DaemonLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let journald: Bool
    let sink: @Sendable (String) -> Void

    public init(
        label: String, level: Logger.Level, journald: Bool = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil,
        sink: @escaping @Sendable (String) -> Void = DaemonLogHandler.writeToStandardError
    ) {
        self.label = label
        self.logLevel = level
        self.journald = journald
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let prefix = journald ? "<\(Self.syslogPriority(event.level))>" : "\(event.level.rawValue.uppercased()) "
        var line = "\(prefix)\(label): \(event.message)"
        if !fields.isEmpty { line += " " + fields }
        // One record is one journal entry: a newline inside a message would split it.
        sink(line.replacingOccurrences(of: "\n", with: " ⏎ ") + "\n")
    }

    /// RFC 5424 severities.
    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    public static let writeToStandardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }
}

extension DaemonConfiguration.LogLevel {
    public var loggerLevel: Logger.Level {
        switch self {
        case .trace: .trace
        case .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        case .critical: .critical
        }
    }
}
