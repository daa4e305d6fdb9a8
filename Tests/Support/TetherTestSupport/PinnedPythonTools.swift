import Foundation

/// The third-party Python peers the tests run (smpclient, smpmgr, imgtool, bleak), each from a venv that a
/// scripts/setup/*-venv.sh script makes once with pinned versions and names on its last line of output.
public enum PinnedPythonTools {
    /// The repository this file is in (Tests/Support/TetherTestSupport/ is three levels down).
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The system's python3, which makes the venvs; nil when there is none.
    public static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Whether the smpclient tests run: always with TETHER_REQUIRE_SMPCLIENT=1 (CI: then a missing python3 or venv
    /// fails them), else when python3 exists and TETHER_SKIP_SMPCLIENT is not set.
    public static var smpclientEnabled: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["TETHER_REQUIRE_SMPCLIENT"] == "1" || (python != nil && environment["TETHER_SKIP_SMPCLIENT"] == nil)
    }

    public struct SetupFailed: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs scripts/setup/`script` (e.g. `smpclient-venv.sh`, `imgtool-venv.sh`) and returns the path it prints
    /// last: the venv's python or tool.
    public static func tool(_ script: String) async throws -> String {
        let path = repositoryRoot.appendingPathComponent("scripts/setup/\(script)").path
        let result = try await ChildProcess.run("/bin/bash", [path], timeout: .seconds(600))
        guard result.status == 0, let last = result.lines.last else {
            throw SetupFailed(description: "\(script) failed (status \(result.status)): \(result.standardError)")
        }
        return last
    }
}

/// One slot as smpclient_ble.py and smpclient_udp.py print MCUmgr's image state (smpclient's ImageState).
public struct SmpclientSlot: Decodable, Equatable, Sendable {
    public var slot: Int
    public var version: String
    public var hash: String?
    public var active: Bool
    public var confirmed: Bool
    public var pending: Bool
    public var permanent: Bool

    public init(slot: Int, version: String, hash: String?, active: Bool, confirmed: Bool, pending: Bool, permanent: Bool) {
        self.slot = slot
        self.version = version
        self.hash = hash
        self.active = active
        self.confirmed = confirmed
        self.pending = pending
        self.permanent = permanent
    }
}
