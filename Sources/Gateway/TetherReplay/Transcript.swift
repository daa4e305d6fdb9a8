import LinkProtocol
import TetherPrimitives

/// A recorded link session: what the gateway and the device received, with relative times.
///
/// The text format (documented in Firmware-fixtures/README.md):
///
///     # comment
///     transcript 1
///     firmware 1.4.2
///     start 2026-11-01T08:00:00Z
///     store-latency-ms 5
///     0.000000 connect mtu=23
///     0.015000 G>D 54 01 01 00 00 00 03 01 02 10 5c 2e
///     0.030000 D>G 54 01 02 00 00 00 16 ...
///     0.500000 store-full ms=6000
///     1.000000 disconnect
///     9.000000 end
///
/// The header lines (`transcript`, `firmware`, `start`, `store-latency-ms`) come once each, before the first timed
/// line; `start` lies between 1970 and 2199 (see `startDays`). Times are seconds since `start`, non-decreasing.
/// `D>G` is a notification the gateway received; `G>D` is a write the device received (kept for reading; a replay
/// recomputes the gateway's writes). `store-full` says the gateway's store refused to commit for that many
/// milliseconds (the replay refuses the same way). Every byte is two hex digits. Lines end in LF or CRLF.
public struct Transcript: Hashable, Sendable {
    public static let formatVersion = 1

    /// The days since 1970-01-01 a `start` may fall on: 1970-01-01 to 2199-12-31. Replay times are 64-bit
    /// nanoseconds since 1970, which end in April 2262; the limit leaves six decades for the transcript's own
    /// times (under 116 days, see `parseSeconds`) and the session's timers and clock arithmetic beyond them.
    /// A start past 2262 used to trap on an overflow (issue 12).
    static let startDays: Range<Int64> = 0..<84_006  // 84 006 days = 2200-01-01T00:00:00Z

    public var firmware: String
    public var start: Timestamp
    /// How long the recording's store took to commit a batch; the replay uses the same (it shapes ACK timing).
    public var storeLatency: Duration
    public var comments: [String]
    public var entries: [TranscriptEntry]
    /// When the recording stopped; the replay runs the session's timers up to here.
    public var end: Timestamp

    public init(firmware: String, start: Timestamp, storeLatency: Duration, comments: [String] = [], entries: [TranscriptEntry], end: Timestamp) {
        self.firmware = firmware
        self.start = start
        self.storeLatency = storeLatency
        self.comments = comments
        self.entries = entries
        self.end = end
    }

    // MARK: - Writing

    public func formatted() -> String {
        var lines = comments.map { "# \($0)" }
        lines.append("transcript \(Self.formatVersion)")
        lines.append("firmware \(firmware)")
        // Whole seconds as recorded; a fraction only when the start has one, so that reading it back gives this start.
        lines.append("start \(UTCFormat.iso8601(start, fractionalDigits: start.nanoseconds % 1_000_000_000 == 0 ? 0 : 9))")
        lines.append("store-latency-ms \(storeLatency.nanoseconds / 1_000_000)")
        for entry in entries {
            let time = Self.seconds(from: start, to: entry.at)
            switch entry.event {
            case .connected(let mtu): lines.append("\(time) connect mtu=\(mtu)")
            case .disconnected: lines.append("\(time) disconnect")
            case .deviceToGateway(let bytes): lines.append("\(time) D>G \(Hex.encode(bytes, separator: " "))")
            case .gatewayToDevice(let bytes): lines.append("\(time) G>D \(Hex.encode(bytes, separator: " "))")
            case .storageFull(let duration): lines.append("\(time) store-full ms=\(duration.nanoseconds / 1_000_000)")
            }
        }
        lines.append("\(Self.seconds(from: start, to: end)) end")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func seconds(from start: Timestamp, to instant: Timestamp) -> String {
        let micros = (instant.nanoseconds - start.nanoseconds) / 1000
        let whole = micros / 1_000_000
        let fraction = String(micros % 1_000_000)
        return "\(whole)." + String(repeating: "0", count: 6 - fraction.count) + fraction
    }

    // MARK: - Reading

    /// Parses a transcript. Errors name the file and the line; no input makes it crash.
    public init(parsing text: String, file: String) throws(TranscriptError) {
        var firmware: String?
        var start: Timestamp?
        var storeLatency: Duration?
        var sawVersion = false
        var comments: [String] = []
        var entries: [TranscriptEntry] = []
        var end: Timestamp?
        var lastTime: Int64 = 0
        var connected = false
        var sawTimedLine = false
        var headerLinesSeen: Set<String> = []

        // A line ends at LF or CRLF (one Character in Swift, so splitting at "\n" alone kept a CRLF file as one line).
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (index, rawLine) in lines.enumerated() {
            let lineNumber = index + 1
            func fail(_ message: String) -> TranscriptError { TranscriptError(file: file, line: lineNumber, message: message) }
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                comments.append(String(line.dropFirst().trimmingWhitespace()))
                continue
            }
            if end != nil { throw fail("nothing may follow the `end` line") }
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            let keyword = String(fields[0])
            if ["transcript", "firmware", "start", "store-latency-ms"].contains(keyword) {
                // A second `start` after timed lines would move every time already read.
                guard !sawTimedLine else { throw fail("`\(keyword)` must come before the first timed line") }
                guard headerLinesSeen.insert(keyword).inserted else { throw fail("a second `\(keyword)` line") }
            }
            switch keyword {
            case "transcript":
                guard fields.count == 2, Int(fields[1]) == Self.formatVersion else {
                    throw fail("expected `transcript \(Self.formatVersion)`; this reader knows format \(Self.formatVersion) only")
                }
                sawVersion = true
                continue
            case "firmware":
                guard fields.count == 2 else { throw fail("expected `firmware <version>`") }
                firmware = String(fields[1])
                continue
            case "start":
                guard fields.count == 2, let (days, nanosecondOfDay) = UTCFormat.parseISO8601Fields(String(fields[1])) else {
                    throw fail("expected `start <UTC time like 2026-11-01T08:00:00Z>`")
                }
                guard Self.startDays.contains(days) else {
                    throw fail("`start` \(fields[1]) is out of range: a transcript starts between 1970-01-01T00:00:00Z and 2199-12-31T23:59:59Z")
                }
                start = Timestamp(nanoseconds: days * 86_400_000_000_000 + nanosecondOfDay)
                continue
            case "store-latency-ms":
                guard fields.count == 2, let milliseconds = Int64(fields[1]), (0...60_000).contains(milliseconds) else {
                    throw fail("expected `store-latency-ms <0…60000>`")
                }
                storeLatency = .milliseconds(milliseconds)
                continue
            default:
                break
            }
            sawTimedLine = true
            guard sawVersion else { throw fail("the first line that is not a comment must be `transcript \(Self.formatVersion)`") }
            guard let start else { throw fail("`start` must come before the first timed line") }
            guard let micros = Self.parseSeconds(keyword) else {
                throw fail("unknown keyword or bad time `\(keyword)` (expected seconds like 1.250000)")
            }
            guard micros >= lastTime else { throw fail("time \(keyword) goes backwards") }
            lastTime = micros
            let at = Timestamp(nanoseconds: start.nanoseconds + micros * 1000)
            guard fields.count >= 2 else { throw fail("a time must be followed by an event") }
            switch fields[1] {
            case "connect":
                guard fields.count == 3, fields[2].hasPrefix("mtu="), let mtu = Int(fields[2].dropFirst(4)), (23...517).contains(mtu) else {
                    throw fail("expected `connect mtu=<23…517>`")
                }
                guard !connected else { throw fail("`connect` while already connected") }
                connected = true
                entries.append(TranscriptEntry(at: at, event: .connected(mtu: mtu)))
            case "disconnect":
                guard fields.count == 2 else { throw fail("`disconnect` takes nothing") }
                guard connected else { throw fail("`disconnect` while not connected") }
                connected = false
                entries.append(TranscriptEntry(at: at, event: .disconnected))
            case "D>G", "G>D":
                guard connected else { throw fail("\(fields[1]) outside a connection") }
                guard fields.count >= 3 else { throw fail("\(fields[1]) needs at least one byte") }
                guard fields.count - 2 <= 512 else { throw fail("an ATT value has at most 512 bytes (got \(fields.count - 2))") }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(fields.count - 2)
                for field in fields.dropFirst(2) {
                    guard let byte = parseByte(field) else { throw fail("`\(field)` is not a byte in two hex digits") }
                    bytes.append(byte)
                }
                entries.append(TranscriptEntry(at: at, event: fields[1] == "D>G" ? .deviceToGateway(bytes) : .gatewayToDevice(bytes)))
            case "store-full":
                guard fields.count == 3, fields[2].hasPrefix("ms="), let milliseconds = Int64(fields[2].dropFirst(3)), (1...86_400_000).contains(milliseconds) else {
                    throw fail("expected `store-full ms=<1…86400000>`")
                }
                entries.append(TranscriptEntry(at: at, event: .storageFull(.milliseconds(milliseconds))))
            case "end":
                guard fields.count == 2 else { throw fail("`end` takes nothing") }
                end = at
            default:
                throw fail("unknown event `\(fields[1])` (expected connect, disconnect, D>G, G>D, store-full or end)")
            }
        }
        func missing(_ what: String) -> TranscriptError { TranscriptError(file: file, line: nil, message: "missing `\(what)` line") }
        guard sawVersion else { throw missing("transcript \(Self.formatVersion)") }
        guard let firmware else { throw missing("firmware") }
        guard let start else { throw missing("start") }
        guard let end else { throw missing("end") }
        self.init(firmware: firmware, start: start, storeLatency: storeLatency ?? .milliseconds(5), comments: comments, entries: entries, end: end)
    }

    /// "12.345678" → microseconds; at most 6 decimals, no sign, at most 7 digits of seconds (under 116 days).
    static func parseSeconds(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].count <= 7,
            parts[0].allSatisfy(\.isASCIIDigitCharacter), let whole = Int64(parts[0])
        else { return nil }
        var micros = whole * 1_000_000
        if parts.count == 2 {
            let fraction = parts[1]
            guard !fraction.isEmpty, fraction.count <= 6, fraction.allSatisfy(\.isASCIIDigitCharacter), let value = Int64(fraction) else { return nil }
            micros += value * Int64(pow10(6 - fraction.count))
        }
        return micros
    }

    private static func pow10(_ exponent: Int) -> Int { (0..<exponent).reduce(1) { result, _ in result * 10 } }
}

/// A transcript that cannot be read: the file, the line (when one is to blame) and what is wrong.
public struct TranscriptError: Error, Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var message: String

    public var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}

extension Character {
    var isASCIIDigitCharacter: Bool { ("0"..."9").contains(self) }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var result = self
        while let first = result.first, first.isWhitespace { result = result.dropFirst() }
        while let last = result.last, last.isWhitespace { result = result.dropLast() }
        return result
    }
}

/// One byte written as two hex digits, nil for anything else.
private func parseByte(_ text: Substring) -> UInt8? {
    guard text.utf8.count == 2, let bytes = Hex.decode(text) else { return nil }
    return bytes.first
}
