/// One thing wrong in a configuration file: the key (dotted, `bluetooth.max_connections`), the line it is on,
/// and what is wrong with it. The line is nil only for a problem that no line carries (a missing file).
public struct ConfigurationProblem: Hashable, Sendable, CustomStringConvertible {
    public var key: String?
    public var line: Int?
    public var message: String

    public init(key: String?, line: Int?, message: String) {
        self.key = key
        self.line = line
        self.message = message
    }

    public var description: String {
        var place: [String] = []
        if let line { place.append("line \(line)") }
        if let key { place.append("key '\(key)'") }
        return place.isEmpty ? message : place.joined(separator: ", ") + ": " + message
    }
}

/// Why a configuration file was refused: every problem found, in line order, with the file's path.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var problems: [ConfigurationProblem]

    public init(path: String, problems: [ConfigurationProblem]) {
        self.path = path
        self.problems = problems
    }

    public var description: String {
        problems.map { "\(path): \($0)" }.joined(separator: "\n")
    }
}
