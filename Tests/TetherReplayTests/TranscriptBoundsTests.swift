import Foundation
import LinkProtocol
import Testing
@testable import TetherReplay
import TetherPrimitives

/// Every number a transcript carries is bounded, with an error naming the line: a start past 2262 used to trap on
/// an Int64 overflow (issue 12).
@Suite("Transcript bounds")
struct TranscriptBoundsTests {
    static func transcript(start: String = "2026-11-01T08:00:00Z", _ body: String = "0 connect mtu=23\n1 end") -> String {
        "transcript 1\nfirmware 1\nstart \(start)\n" + body
    }

    @Test("a start outside 1970…2199 is refused on its line", arguments: [
        "2263-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2200-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "0000-01-01T00:00:00Z",
    ])
    func startOutOfRange(start: String) {
        #expect {
            _ = try Transcript(parsing: Self.transcript(start: start), file: "far.transcript")
        } throws: { error in
            guard let error = error as? TranscriptError else { return false }
            return error.line == 3 && error.message.contains("out of range") && error.message.contains("2199-12-31T23:59:59Z")
        }
    }

    @Test("the ends of the range are accepted and replay")
    func startAtTheEdges() throws {
        for start in ["1970-01-01T00:00:00Z", "2199-12-31T23:59:59.999999999Z"] {
            // The longest transcript time with the latest start still fits, timers and all.
            let transcript = try Transcript(parsing: Self.transcript(start: start, "0 connect mtu=23\n9999999.999999 end"), file: "edge")
            #expect(UTCFormat.iso8601(transcript.start, fractionalDigits: 9).hasPrefix(String(start.prefix(19))))
            _ = TranscriptReplayer(transcript: transcript, name: "edge").replay()
        }
    }

    @Test("a time over seven digits of seconds, or a duplicate or late header line, is refused on its line", arguments: [
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n" + "10000000 connect mtu=23\n10000001 end", 4, "bad time"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n" + "0 connect mtu=99999999999999999999\n1 end", 4, "23…517"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n" + "0 store-full ms=99999999999999999999\n1 end", 4, "1…86400000"),
        ("transcript 1\nfirmware 1\nstore-latency-ms 99999999999999999999\n", 3, "0…60000"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n" + "0 connect mtu=23\nstart 2226-11-01T08:00:00Z\n1 end", 5, "before the first timed line"),
        ("transcript 1\nfirmware 1\nfirmware 2\n", 3, "a second `firmware`"),
        ("transcript 1\nstart 2026-11-01T08:00:00Z\nstart 2026-11-01T08:00:00Z\n", 3, "a second `start`"),
    ])
    func numbersAndHeaders(text: String, line: Int, fragment: String) {
        #expect {
            _ = try Transcript(parsing: text, file: "bad")
        } throws: { error in
            guard let error = error as? TranscriptError else { return false }
            return error.line == line && error.message.contains(fragment)
        }
    }

    @Test("a UTC time past what 64-bit nanoseconds hold parses to nil, not a trap")
    func utcOverflow() {
        #expect(UTCFormat.parseISO8601("2262-04-11T23:47:16.854775807Z") == Timestamp(nanoseconds: .max))
        #expect(UTCFormat.parseISO8601("2262-04-11T23:47:16.854775808Z") == nil)
        #expect(UTCFormat.parseISO8601("9999-12-31T23:59:59Z") == nil)
        #expect(UTCFormat.parseISO8601("0000-01-01T00:00:00Z") == nil)
    }

    @Test("CRLF line ends read like LF")
    func crlf() throws {
        let text = Self.transcript("0 connect mtu=23\n0.5 D>G 54 01\n1 end\n")
        let lf = try Transcript(parsing: text, file: "lf")
        let crlf = try Transcript(parsing: text.replacingOccurrences(of: "\n", with: "\r\n"), file: "crlf")
        #expect(crlf == lf)
    }

    @Test("a start with a fraction of a second survives formatting")
    func fractionalStart() throws {
        let transcript = try Transcript(parsing: Self.transcript(start: "2026-11-01T08:00:00.25Z"), file: "f")
        #expect(try Transcript(parsing: transcript.formatted(), file: "again") == transcript)
    }
}
