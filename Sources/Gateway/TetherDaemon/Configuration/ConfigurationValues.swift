/// Parsers for the value forms the configuration uses beyond TOML's own types. Each returns nil for a value it
/// cannot read; the reader turns that into a problem naming the key, the line and the accepted form.
enum ConfigurationValues {
    /// `"250ms"`, `"30s"`, `"5m"`, `"2h"`, `"30d"`: a positive integer and one unit.
    static func duration(_ text: String) -> Duration? {
        let units: [(suffix: String, nanoseconds: Int64)] = [
            ("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000), ("h", 3_600_000_000_000),
            ("d", 86_400_000_000_000),
        ]
        for unit in units where text.hasSuffix(unit.suffix) {
            let number = text.dropLast(unit.suffix.count)
            guard !number.isEmpty, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber),
                let value = Int64(number), value > 0
            else { return nil }
            let (nanoseconds, overflow) = value.multipliedReportingOverflow(by: unit.nanoseconds)
            return overflow ? nil : .nanoseconds(nanoseconds)
        }
        return nil
    }

    static let durationForm = "a positive whole number with a unit: ms, s, m, h or d (e.g. \"30s\")"

    /// `"512MiB"`, `"2GiB"`, `"64MB"`, `"4096"` (bytes): binary (KiB, MiB, GiB) or decimal (kB, MB, GB) units.
    static func size(_ text: String) -> Int64? {
        let units: [(suffix: String, bytes: Int64)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("kB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000),
            ("B", 1),
        ]
        var number = Substring(text)
        var multiplier: Int64 = 1
        for unit in units where text.hasSuffix(unit.suffix) {
            number = text.dropLast(unit.suffix.count)
            multiplier = unit.bytes
            break
        }
        guard !number.isEmpty, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber), let value = Int64(number)
        else { return nil }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }

    static let sizeForm = "a whole number of bytes, optionally with a unit: KiB, MiB, GiB, kB, MB or GB (e.g. \"512MiB\")"

    /// A Bluetooth device address, `C0:54:45:00:00:03` (either case), in upper case as the gateway names devices.
    static func deviceAddress(_ text: String) -> String? {
        let pairs = text.split(separator: ":", omittingEmptySubsequences: false)
        guard pairs.count == 6, pairs.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) && $0.allSatisfy(\.isASCII) }) else {
            return nil
        }
        return text.uppercased()
    }

    /// `127.0.0.1:9464`, `localhost:9464`, `[::1]:9464`.
    static func listenAddress(_ text: String) -> ListenAddress? {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (1...65535).contains(port) else { return nil }
        return ListenAddress(host: String(host), port: port)
    }
}
