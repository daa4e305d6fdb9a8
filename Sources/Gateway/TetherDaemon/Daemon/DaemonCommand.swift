import ArgumentParser
import Foundation
import Logging

/// `tetherd [--config PATH] [--check-config]`. Exit status: 0 after a clean stop or a valid configuration, 1 when
/// the configuration is refused or the daemon fails.
public struct DaemonCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tetherd",
        abstract: "The Tether gateway daemon: BLE device sessions, the local store, sync and the control API.",
        discussion: "Configuration: \(DaemonConfiguration.defaultPath) (deploy/tether.toml documents every key). Stops gracefully on SIGTERM or SIGINT.")

    @Option(name: .long, help: ArgumentHelp("The configuration file.", valueName: "path"))
    var config: String = DaemonConfiguration.defaultPath

    @Flag(name: .long, help: "Check the configuration (syntax, every key and value, the token file's permissions) and exit: 0 valid, 1 not.")
    var checkConfig = false

    public init() {}

    public func run() async throws {
        let configuration: DaemonConfiguration
        do {
            configuration = try Self.loadChecked(path: config)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(1)
        }
        if checkConfig {
            print("\(config): configuration is valid")
            return
        }
        // Libraries that make their own Logger (label only) log the same way, at the configured level.
        let level = configuration.log.level.loggerLevel
        LoggingSystem.bootstrap { label in DaemonLogHandler(label: label, level: level) }
        do {
            try await TetherDaemon(configuration: configuration).run()
        } catch {
            FileHandle.standardError.write(Data("tetherd: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The configuration with both the value checks and the file-system checks.
    public static func loadChecked(path: String) throws(ConfigurationError) -> DaemonConfiguration {
        let configuration = try ConfigurationReader.load(path: path)
        let document = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let problems = ConfigurationReader.fileProblems(in: configuration, document: document, path: path)
        guard problems.isEmpty else { throw ConfigurationError(path: path, problems: problems) }
        return configuration
    }
}
