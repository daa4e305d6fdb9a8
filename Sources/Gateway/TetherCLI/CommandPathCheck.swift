import ArgumentParser

extension TetherRootCommand {
    /// Parses `arguments` as argument-parser does, after refusing an unknown command name.
    ///
    /// argument-parser honours a help flag before it reports leftover arguments, so `tether UNKNOWN --help` printed
    /// the root help and exited 0, as if `UNKNOWN` were fine. An unknown command is a usage error (exit 2) whatever
    /// follows it; the same holds one level down (`tether settings UNKNOWN --help`).
    ///
    /// This shadows `ParsableCommand.parseAsRoot`, a protocol extension method: calls on `TetherRootCommand` reach
    /// this one, and the call below, through the protocol, reaches argument-parser's.
    public static func parseAsRoot(_ arguments: [String]? = nil) throws -> any ParsableCommand {
        let arguments = arguments ?? Array(CommandLine.arguments.dropFirst())
        try checkCommandPath(arguments)
        return try (Self.self as any ParsableCommand.Type).parseAsRoot(arguments)
    }

    /// Follows the leading command names through the command tree and throws a `ValidationError` (exit 2) at the
    /// first word that is not a subcommand of a command that has subcommands. Stops at the first option (what
    /// follows may be an option's value) and at a command without subcommands (what follows are its arguments).
    static func checkCommandPath(_ arguments: [String]) throws {
        var command: any ParsableCommand.Type = Self.self
        var path = [configuration.commandName ?? "tether"]
        for word in arguments {
            let subcommands = command.configuration.subcommands
            guard !word.hasPrefix("-"), !subcommands.isEmpty else { return }
            // argument-parser's built-in `help` subcommand (`tether help settings`) exists at the root only.
            if path.count == 1 && word == "help" { return }
            guard let next = subcommands.first(where: { $0.names.contains(word) }) else {
                let names = subcommands.flatMap { $0.names.prefix(1) }.joined(separator: ", ")
                let place = path.joined(separator: " ")
                throw ValidationError("'\(word)' is not a command of '\(place)'; the commands are \(names) (see '\(place) --help').")
            }
            command = next
            path.append(word)
        }
    }
}

extension ParsableCommand {
    /// The name a command is invoked by, then its aliases.
    fileprivate static var names: [String] { [_commandName] + configuration.aliases }
}
