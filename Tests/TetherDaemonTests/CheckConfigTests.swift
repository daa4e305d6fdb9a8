import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `tetherd --check-config` as the .deb test and a technician run it: exit 0 for a valid file, 1 with every
/// problem (key and line) on stderr otherwise; a token file others can read is refused.
struct CheckConfigTests {
    func check(_ path: String, in directory: TemporaryDirectory) async throws -> (status: Int32, output: String) {
        let log = directory.file("check-\(UUID().uuidString).log")
        let process = try DaemonProcess(arguments: ["--check-config", "--config", path], log: log)
        let status = try await process.waitForExit(timeout: .seconds(60))
        return (status, process.logText)
    }

    @Test func theShippedExamplePasses() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try await check(ConfigurationTests.example, in: directory)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("configuration is valid"))
    }

    @Test func aBadFileFailsNamingKeysAndLines() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write("tether.toml", """
            [bluetooth]
            max_connections = 42
            colour = "blue"
            """)
        let result = try await check(path, in: directory)
        #expect(result.status == 1)
        #expect(result.output.contains("\(path): line 2, key 'bluetooth.max_connections': 42 is outside 1…32"))
        #expect(result.output.contains("\(path): line 3, key 'bluetooth.colour': unknown key"))
    }

    @Test func aMissingFileFails() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try await check(directory.file("absent.toml"), in: directory)
        #expect(result.status == 1)
        #expect(result.output.contains("cannot read the file"))
    }

    @Test func aTokenFileOthersCanReadIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let token = try directory.write("sync.token", "secret-token-value\n", mode: 0o644)
        let path = try directory.write("tether.toml", """
            [sync]
            server_url = "http://127.0.0.1:9"
            token_file = "\(token)"
            """)
        let refused = try await check(path, in: directory)
        #expect(refused.status == 1)
        #expect(refused.output.contains("line 3, key 'sync.token_file'"))
        #expect(refused.output.contains("chmod 600"))
        #expect(!refused.output.contains("secret-token-value"))

        chmod(token, 0o600)
        let accepted = try await check(path, in: directory)
        #expect(accepted.status == 0, "\(accepted.output)")
    }
}
