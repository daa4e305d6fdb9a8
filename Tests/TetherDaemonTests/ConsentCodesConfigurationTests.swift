import Foundation
import Testing
@testable import TetherDaemon
#if canImport(Glibc)
import Glibc
#endif

/// `[health] consent_codes_file`: the multi-user devices' consent codes (docs/design/health.md, "Multi-user scales:
/// User Data Service consent"). A secrets file: refused when group or others may read it, a malformed line refused
/// with the file's name and the line's number, and no message ever shows a code.
struct ConsentCodesConfigurationTests {
    static let good = """
        # the bathroom scale: address, user index, consent code
        C0:54:45:00:00:05 1 9137
        c0:54:45:00:00:05\t2   0042   # lower case and tabs are fine; a trailing comment too

        C0:54:45:00:00:06 0 6052
        """

    @Test func aGoodFileIsReadByAddressInIndexOrder() throws {
        let codes = try ConsentCodes.parse(Self.good, path: "/etc/tether/consent-codes")
        #expect(codes.byAddress.keys.sorted() == ["C0:54:45:00:00:05", "C0:54:45:00:00:06"])
        #expect(codes.byAddress["C0:54:45:00:00:05"]?.map(\.userIndex) == [1, 2])
        #expect(codes.byAddress["C0:54:45:00:00:05"]?.map(\.code.value) == [9137, 42])
        #expect(codes.byAddress["C0:54:45:00:00:06"]?.map(\.code.value) == [6052])
        #expect(codes.userCount == 3)
        // Printed whole (a careless log line), it shows no code.
        #expect(!"\(codes)".contains("9137") && !String(reflecting: codes).contains("6052"), "\(codes)")
        #expect(try ConsentCodes.parse("# nothing yet\n\n", path: "x").isEmpty)
        // Written on Windows: CRLF line ends.
        #expect(try ConsentCodes.parse("C0:54:45:00:00:05 1 9137\r\nC0:54:45:00:00:05 2 42\r\n", path: "x").userCount == 2)
    }

    @Test(arguments: [
        ("C0:54:45:00:00:05 1", 1, "three fields"),
        ("\n\nC0:54:45:00:00:05 1 9137 7", 3, "three fields"),
        ("C0:54:45:00:00 1 9137", 1, "the address"),
        ("C0:54:45:00:00:0G 1 9137", 1, "the address"),
        ("C0:54:45:00:00:05 255 9137", 1, "the user index must be a number from 0 to 254"),
        ("C0:54:45:00:00:05 -1 9137", 1, "the user index"),
        ("C0:54:45:00:00:05 1 10000", 1, "the consent code must be a number from 0 to 9999"),
        ("C0:54:45:00:00:05 1 91x7", 1, "the consent code"),
        ("C0:54:45:00:00:05 1 9137\nc0:54:45:00:00:05 1 9138", 2, "user 1 of C0:54:45:00:00:05 is already given on line 1"),
    ])
    func aMalformedLineIsRefusedByFileAndLineWithoutItsText(text: String, line: Int, reason: String) {
        do {
            _ = try ConsentCodes.parse(text, path: "/etc/tether/consent-codes")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.line == line)
            #expect(error.description.hasPrefix("/etc/tether/consent-codes: line \(line): "), "\(error)")
            #expect(error.description.contains(reason), "\(error)")
            for code in ["9137", "9138", "10000", "91x7"] { #expect(!error.description.contains(code), "\(error)") }
        }
    }

    /// Through the configuration, as `tetherd --check-config` and tetherd's start read it: a good file at 0600 is
    /// accepted; at 0644 it is refused naming the key, its line and chmod; a bad line is refused naming the file and
    /// line; unset, nothing is read.
    @Test func theFileIsCheckedWithTheConfiguration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("consent-codes", Self.good, mode: 0o600)
        let document = """
            [health]
            enabled = true
            consent_codes_file = "\(file)"
            """
        let configuration = try ConfigurationReader.parse(document, path: "tether.toml")
        #expect(configuration.health.consentCodesFile == file)
        #expect(ConfigurationReader.fileProblems(in: configuration, document: document, path: "tether.toml").isEmpty)
        #expect(try ConsentCodes.load(path: file).userCount == 3)

        chmod(file, 0o644)
        let open = ConfigurationReader.fileProblems(in: configuration, document: document, path: "tether.toml")
        #expect(open.count == 1)
        #expect(open.first?.key == "health.consent_codes_file" && open.first?.line == 3, "\(open)")
        #expect(open.first?.message.contains("has mode 644; a consent codes file must be readable by its owner only: chmod 600") == true, "\(open)")
        #expect(throws: ConsentCodes.LoadError.self) { try ConsentCodes.load(path: file) }

        let bad = try directory.write("bad-codes", "C0:54:45:00:00:05 1 9137\nC0:54:45:00:00:05 2 99999\n", mode: 0o600)
        let badDocument = "[health]\nconsent_codes_file = \"\(bad)\"\n"
        let badConfiguration = try ConfigurationReader.parse(badDocument, path: "tether.toml")
        let refused = ConfigurationReader.fileProblems(in: badConfiguration, document: badDocument, path: "tether.toml")
        #expect(refused.map(\.message) == ["\(bad): line 2: the consent code must be a number from 0 to 9999"])
        let shown = refused.description.replacingOccurrences(of: bad, with: "FILE")
        #expect(!shown.contains("99999") && !shown.contains("9137"), "\(shown)")

        #expect(try ConfigurationReader.parse("[health]\nenabled = true\n", path: "tether.toml").health.consentCodesFile == nil)
        #expect(ConfigurationReader.fileProblems(in: DaemonConfiguration(), document: "", path: "tether.toml").isEmpty)
    }

    @Test func aRelativePathIsRefused() {
        #expect(throws: ConfigurationError.self) {
            try ConfigurationReader.parse("[health]\nconsent_codes_file = \"consent-codes\"\n", path: "tether.toml")
        }
    }
}
