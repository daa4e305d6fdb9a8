/// Where an SMP device is reached over UDP: `HOST:PORT`, `[IPv6]:PORT`, or a host alone for Zephyr's default port
/// 1337 (CONFIG_MCUMGR_TRANSPORT_UDP_PORT).
public struct UDPTarget: Hashable, Sendable, CustomStringConvertible {
    public static let defaultPort: UInt16 = 1337

    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16 = UDPTarget.defaultPort) {
        self.host = host
        self.port = port
    }

    /// Nil for an empty host, a port that is not 1…65535, or an unclosed `[`.
    public init?(parsing text: String) {
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty else { return nil }
        var port = Self.defaultPort
        if let portText {
            guard let value = UInt16(portText), value != 0 else { return nil }
            port = value
        }
        self.init(host: String(host), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
