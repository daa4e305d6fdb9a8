/// Where each key of a TOML document is written, by dotted path (`sync.server_url`) → 1-based line.
///
/// TOMLKit parses the values but does not say where a value came from, and an error must name the line
/// (issue 6: "unknown keys and bad values rejected with the key and line"). This scanner only finds key
/// positions in a document TOMLKit already accepted: table headers (`[a.b]`, `[[a]]`), `key = …` lines (bare,
/// quoted or dotted keys), and it skips the inside of multi-line strings and multi-line arrays so that a line
/// there is never taken for a key.
public struct TOMLKeyLines: Sendable {
    public private(set) var lines: [String: Int] = [:]
    /// Table headers whose key does not start with a key character or a quote (`[)x]`, `[` alone), by line: the
    /// reader refuses them before TOMLKit sees them, because toml++ 3 only asserts that a header's key starts
    /// well (parse_table_header → parse_key: an abort with assertions, undefined behaviour without).
    public private(set) var malformedHeaderLines: [Int] = []

    public init(document: String) {
        var table: [String] = []
        var openMultilineString: String?  // the delimiter that closes it
        var bracketDepth = 0  // inside a value's array or inline table spanning lines

        // TOML lines end in LF or CRLF; CRLF is one Character in Swift, so splitting at "\n" alone missed it.
        let documentLines = document.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (index, rawLine) in documentLines.enumerated() {
            let number = index + 1
            var line = Substring(rawLine)
            if let delimiter = openMultilineString {
                guard let end = line.range(of: delimiter) else { continue }
                openMultilineString = nil
                line = line[end.upperBound...]
                bracketDepth += Self.bracketBalance(of: line, openString: &openMultilineString)
                continue
            }
            if bracketDepth > 0 {
                bracketDepth += Self.bracketBalance(of: line, openString: &openMultilineString)
                continue
            }
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("[") {
                let isArray = trimmed.hasPrefix("[[")
                let body = trimmed.dropFirst(isArray ? 2 : 1)
                // TOML 1.0 (keys): a key is bare (A-Za-z0-9_-) or quoted; whitespace may come first; `]` is toml++'s
                // own "blank key" error.
                guard let keyStart = body.first(where: { $0 != " " && $0 != "\t" }),
                    keyStart == "]" || Self.startsAKey(keyStart)
                else {
                    malformedHeaderLines.append(number)
                    continue
                }
                guard let close = Self.unquotedIndex(of: "]", in: body) else { continue }
                table = Self.keyPath(body[..<close])
                let path = table.joined(separator: ".")
                if lines[path] == nil { lines[path] = number }
                continue
            }
            guard let equals = Self.unquotedIndex(of: "=", in: trimmed) else { continue }
            let key = table + Self.keyPath(trimmed[..<equals])
            let path = key.joined(separator: ".")
            if lines[path] == nil { lines[path] = number }
            // Every prefix of a dotted key is a table defined here too (`a.b = 1` defines table `a`).
            for length in stride(from: key.count - 1, to: table.count, by: -1) {
                let prefix = key.prefix(length).joined(separator: ".")
                if lines[prefix] == nil { lines[prefix] = number }
            }
            bracketDepth += Self.bracketBalance(of: trimmed[trimmed.index(after: equals)...], openString: &openMultilineString)
        }
    }

    /// The line of `path`, or of its nearest enclosing table when the key itself is not written anywhere.
    public func line(of path: String) -> Int? {
        var components = path.split(separator: ".").map(String.init)
        while !components.isEmpty {
            if let line = lines[components.joined(separator: ".")] { return line }
            components.removeLast()
        }
        return nil
    }

    /// A bare key's character (A-Za-z0-9_-) or a quote (TOML 1.0, "Keys").
    static func startsAKey(_ character: Character) -> Bool {
        guard character.isASCII else { return false }
        return character.isLetter || character.isNumber || "_-\"'".contains(character)
    }

    /// `a."b.c" . d` → ["a", "b.c", "d"].
    static func keyPath(_ text: Substring) -> [String] {
        var parts: [String] = []
        var current = ""
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == "." {
                parts.append(current.trimmingSpaces)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current.trimmingSpaces)
        return parts
    }

    /// The first `target` outside quotes.
    static func unquotedIndex(of target: Character, in text: Substring) -> Substring.Index? {
        var quote: Character?
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if let open = quote {
                if character == "\\" && open == "\"" {
                    index = text.index(after: index)
                    if index == text.endIndex { break }
                } else if character == open {
                    quote = nil
                }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == target {
                return index
            }
            index = text.index(after: index)
        }
        return nil
    }

    /// Opening minus closing brackets/braces of a value, outside strings and comments; notes a multi-line
    /// string left open at the end of the line.
    static func bracketBalance(of text: Substring, openString: inout String?) -> Int {
        var balance = 0
        var index = text.startIndex
        while index < text.endIndex {
            let rest = text[index...]
            for delimiter in ["\"\"\"", "'''"] where rest.hasPrefix(delimiter) {
                let after = text.index(index, offsetBy: 3)
                if let close = text[after...].range(of: delimiter) {
                    index = close.upperBound
                } else {
                    openString = delimiter
                    return balance
                }
            }
            guard index < text.endIndex else { break }
            let character = text[index]
            switch character {
            case "#": return balance
            case "\"", "'":
                var next = text.index(after: index)
                while next < text.endIndex && text[next] != character {
                    if character == "\"" && text[next] == "\\" { next = text.index(after: next) }
                    if next < text.endIndex { next = text.index(after: next) }
                }
                index = next < text.endIndex ? text.index(after: next) : next
                continue
            case "[", "{": balance += 1
            case "]", "}": balance -= 1
            default: break
            }
            index = text.index(after: index)
        }
        return balance
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
