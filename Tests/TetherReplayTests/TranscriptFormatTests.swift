import Testing
import LinkProtocol
@testable import TetherReplay
import TetherPrimitives

@Suite("Transcript text format")
struct TranscriptFormatTests {
    static let minimal = """
        # a comment
        transcript 1
        firmware 1.4.2
        start 2026-11-01T08:00:00Z
        store-latency-ms 5
        0.000000 connect mtu=23
        0.015000 G>D 54 01 01 00 00 00 03 01 02 10 5c 2e
        1.5 disconnect
        2.000000 end
        """

    @Test("parses header, entries and end")
    func parses() throws {
        let transcript = try Transcript(parsing: Self.minimal, file: "t")
        #expect(transcript.firmware == "1.4.2")
        #expect(transcript.storeLatency == .milliseconds(5))
        #expect(transcript.entries.count == 3)
        #expect(transcript.entries[1].at.nanoseconds - transcript.start.nanoseconds == 15_000_000)
        #expect(transcript.entries[2].event == .disconnected)
        #expect(transcript.end.nanoseconds - transcript.start.nanoseconds == 2_000_000_000)
        #expect(UTCFormat.iso8601(transcript.start, fractionalDigits: 0) == "2026-11-01T08:00:00Z")
    }

    @Test("formatting then parsing gives the same transcript")
    func roundTrip() throws {
        let transcript = try Transcript(parsing: Self.minimal, file: "t")
        let again = try Transcript(parsing: transcript.formatted(), file: "t2")
        #expect(again.entries == transcript.entries)
        #expect(again.start == transcript.start)
        #expect(again.end == transcript.end)
    }

    @Test("malformed lines are named by file and line", arguments: [
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n0.1 D>G 54\n1 end", 4, "outside a connection"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n0.1 connect mtu=23\n0.2 D>G 5g\n1 end", 5, "not a byte"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n0.5 connect mtu=23\n0.2 disconnect\n1 end", 5, "goes backwards"),
        ("transcript 2\n", 1, "format 1"),
        ("firmware 1\n0.1 connect mtu=23", 2, "must be `transcript 1`"),
        ("transcript 1\nfirmware 1\nstart yesterday\n", 3, "UTC time"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n0.1 connect mtu=9\n1 end", 4, "23…517"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n-1 connect mtu=23\n1 end", 4, "bad time"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n1 end\n2 end", 5, "nothing may follow"),
        ("transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n0.1 jump", 4, "unknown event"),
    ])
    func malformed(text: String, line: Int, fragment: String) {
        #expect {
            _ = try Transcript(parsing: text, file: "bad.transcript")
        } throws: { error in
            guard let error = error as? TranscriptError else { return false }
            return error.file == "bad.transcript" && error.line == line && error.message.contains(fragment)
        }
    }

    @Test("a transcript without its end line is refused")
    func missingEnd() {
        #expect(throws: TranscriptError.self) {
            _ = try Transcript(parsing: "transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n0 connect mtu=23\n", file: "x")
        }
    }

    @Test("random bytes never crash the parser")
    func randomInput() {
        var random = SplitMix64(seed: 42)
        let alphabet = Array("0123456789abcdef .GD><\nconectmu=disrfwa#-:TZ".utf8)
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<200, using: &random)
            let bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
            _ = try? Transcript(parsing: "transcript 1\nfirmware 1\nstart 2026-11-01T08:00:00Z\n" + String(decoding: bytes, as: UTF8.self), file: "fuzz")
        }
    }

    @Test("UTC formatting agrees with known instants")
    func utc() {
        #expect(UTCFormat.iso8601(Timestamp(nanoseconds: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(UTCFormat.iso8601(Timestamp(nanoseconds: 951_782_400_123_000_000)) == "2000-02-29T00:00:00.123Z")
        #expect(UTCFormat.parseISO8601("2000-02-29T00:00:00.123Z") == Timestamp(nanoseconds: 951_782_400_123_000_000))
        #expect(UTCFormat.parseISO8601("2000-02-29T00:00:00.Z") == nil)
    }
}
