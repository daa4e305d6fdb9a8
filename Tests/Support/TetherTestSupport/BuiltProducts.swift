import Foundation

/// The executables `swift build` put beside the test bundle (tether, tetherd, tether-server, tether-sim,
/// tether-store-crashtest): the directory `swift build --show-bin-path` names, found from the running bundle.
public enum BuiltProducts {
    /// The directories to look in: the test bundle's own, and its parent (a bundle that is a directory).
    public static var directories: [URL] {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return [bundle, bundle.deletingLastPathComponent()]
    }

    /// The executable `name`, or the path in the environment variable `override` when that is set (to test
    /// another build); nil when it was not built.
    public static func path(_ name: String, override: String? = nil) -> String? {
        if let override, let path = ProcessInfo.processInfo.environment[override] { return path }
        return directories.map { $0.appendingPathComponent(name).path }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// `path(_:override:)`, throwing when it was not built.
    public static func require(_ name: String, override: String? = nil) throws -> String {
        guard let path = path(name, override: override) else { throw NotBuilt(name: name) }
        return path
    }

    public struct NotBuilt: Error, CustomStringConvertible {
        public let name: String
        public var description: String { "\(name) was not built next to the tests (swift build --build-tests builds it)" }
    }
}
