import Foundation
import TOMLKit

/// Reads tetherd's TOML configuration: syntax (TOMLKit), then every key against `ConfigurationSchema`, then
/// the rules between keys. All problems are collected so one run of `tetherd --check-config` shows them all.
public enum ConfigurationReader {
    /// Parses `document` (the contents of `path`, which is used in messages only).
    public static func parse(_ document: String, path: String) throws(ConfigurationError) -> DaemonConfiguration {
        let lines = TOMLKeyLines(document: document)
        if let line = lines.malformedHeaderLines.first {
            throw ConfigurationError(path: path, problems: [
                ConfigurationProblem(
                    key: nil, line: line,
                    message: "not valid TOML: a table header names a table, starting with a letter, a digit, _, - or a quote")
            ])
        }
        let root: TOMLTable
        do {
            root = try TOMLTable(string: document)
        } catch let error as TOMLParseError {
            throw ConfigurationError(path: path, problems: [
                ConfigurationProblem(key: nil, line: error.source.begin.line, message: "not valid TOML: \(error.description)")
            ])
        } catch {
            throw ConfigurationError(path: path, problems: [ConfigurationProblem(key: nil, line: nil, message: "not valid TOML: \(error)")])
        }

        var problems: [ConfigurationProblem] = []
        func problem(_ key: String, _ message: String) {
            problems.append(ConfigurationProblem(key: key, line: lines.line(of: key), message: message))
        }

        var configuration = DaemonConfiguration()
        for sectionName in root.keys {
            guard let section = ConfigurationSchema.sections.first(where: { $0.name == sectionName }) else {
                let known = ConfigurationSchema.sections.map { "[\($0.name)]" }.joined(separator: ", ")
                problem(sectionName, "unknown section; the sections are \(known)")
                continue
            }
            guard let table = root[sectionName]?.table else {
                problem(sectionName, "expected a table ([\(sectionName)]), got a value")
                continue
            }
            for keyName in table.keys {
                let dotted = "\(sectionName).\(keyName)"
                guard let key = section.keys.first(where: { $0.name == keyName }) else {
                    let known = section.keys.map(\.name).joined(separator: ", ")
                    problem(dotted, "unknown key; [\(sectionName)] takes \(known)")
                    continue
                }
                guard let value = table[keyName] else { continue }
                if let message = key.apply(&configuration, value) { problem(dotted, message) }
            }
        }

        // Rules between keys.
        if configuration.bluetooth.backoffMaximum < configuration.bluetooth.backoffInitial {
            problem("bluetooth.backoff_max", "must not be shorter than bluetooth.backoff_initial")
        }
        if configuration.gateway.database.hasSuffix("/") {
            problem("gateway.database", "names a directory; give the database file, e.g. \"/var/lib/tether/gateway.sqlite\"")
        }

        guard problems.isEmpty else {
            throw ConfigurationError(path: path, problems: problems.sorted { ($0.line ?? 0, $0.key ?? "") < ($1.line ?? 0, $1.key ?? "") })
        }
        return configuration
    }

    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(ConfigurationError) -> DaemonConfiguration {
        let document: String
        do {
            document = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(path: path, problems: [
                ConfigurationProblem(key: nil, line: nil, message: "cannot read the file (\(Self.reason(error)))")
            ])
        }
        return try parse(document, path: path)
    }

    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if nsError.domain == NSCocoaErrorDomain && nsError.code == NSFileReadNoSuchFileError { return "no such file" }
        if nsError.domain == NSCocoaErrorDomain && nsError.code == NSFileReadNoPermissionError { return "permission denied" }
        return nsError.localizedDescription
    }
}
