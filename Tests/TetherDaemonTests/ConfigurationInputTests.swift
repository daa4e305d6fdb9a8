import Testing
@testable import TetherDaemon

/// Configuration text that TOMLKit's parser must never see, and line numbers in CRLF files (issue 12; found by
/// Fuzz/ConfigurationFuzzer).
struct ConfigurationInputTests {
    /// toml++ 3 asserts, and does not check, that a table header's key starts with a key character: `[)s"` aborted
    /// `tetherd --check-config` (Fuzz/crashes-found/config-tomlplusplus-header-assert).
    @Test(arguments: ["#)b\n\n[)s\"\n", "[gateway]\n[\n", "[ #x]\n", "[[ )]]\n", "[é]\n", "a = 1\n[\u{00A0}x]\n"])
    func aHeaderWithoutAKeyIsRefusedOnItsLine(document: String) {
        #expect {
            _ = try ConfigurationReader.parse(document, path: "bad.toml")
        } throws: { error in
            guard let error = error as? ConfigurationError, let problem = error.problems.first else { return false }
            let expectedLine = document.split(separator: "\n", omittingEmptySubsequences: false)
                .firstIndex { $0.hasPrefix("[") && !$0.hasPrefix("[gateway]") }.map { $0 + 1 }
            return error.problems.count == 1 && problem.line == expectedLine && problem.message.contains("table header")
        }
    }

    @Test func wellFormedHeadersStillParse() throws {
        let configuration = try ConfigurationReader.parse(
            "[ gateway ]\ndatabase = \"/x.sqlite\"\n[\"log\"]\nlevel = \"debug\"\n", path: "ok.toml")
        #expect(configuration.gateway.database == "/x.sqlite")
        #expect(configuration.log.level == .debug)
    }

    @Test func problemsInACRLFFileNameTheirLines() {
        let document = "# comment\r\n[gateway]\r\ndatabase = \"/var/lib/tether/gw.sqlite\"\r\ndatabse = \"/typo\"\r\n"
        do {
            _ = try ConfigurationReader.parse(document, path: "crlf.toml")
            Issue.record("parsed")
        } catch {
            #expect(error.problems.map(\.key) == ["gateway.databse"])
            #expect(error.problems.map(\.line) == [4])
        }
    }
}
