import Glibc

/// Opening a wire-protocol connection: the address, the Unix socket, and the SASL handshake.
///
/// Spec, "Server Addresses": `transport:key=value,...`, several separated by `;`, tried in order; values are
/// percent-escaped. Only `unix:path=` and `unix:abstract=` are understood here: the system bus, `DBusPrivateBus`
/// and BlueZ deployments use nothing else.
enum WireTransport {
    enum Endpoint: Equatable {
        case path(String)
        case abstract(String)
    }

    static func endpoints(in address: String) throws -> [Endpoint] {
        var endpoints: [Endpoint] = []
        for entry in address.split(separator: ";") {
            guard let colon = entry.firstIndex(of: ":") else { continue }
            guard entry[..<colon] == "unix" else { continue }
            for pair in entry[entry.index(after: colon)...].split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let value = try unescape(parts[1])
                switch parts[0] {
                case "path": endpoints.append(.path(value))
                case "abstract": endpoints.append(.abstract(value))
                default: continue
                }
            }
        }
        guard !endpoints.isEmpty else {
            throw DBusError(.badAddress, "No unix:path= or unix:abstract= endpoint in the D-Bus address '\(address)'")
        }
        return endpoints
    }

    private static func unescape(_ text: Substring) throws -> String {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw DBusError(.badAddress, "Bad percent escape in the D-Bus address value '\(text)'")
            }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Connects to the first endpoint that accepts and authenticates; returns a blocking, close-on-exec socket.
    static func open(_ address: String, handshakeTimeout: Duration) throws -> Int32 {
        var lastError: any Error = DBusError(.noServer, "No endpoint in '\(address)' accepted the connection")
        for endpoint in try endpoints(in: address) {
            do {
                let descriptor = try connect(endpoint)
                do {
                    try authenticate(descriptor, timeout: handshakeTimeout)
                    return descriptor
                } catch {
                    _ = Glibc.close(descriptor)
                    throw error
                }
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    private static func connect(_ endpoint: Endpoint) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw DBusError(.ioError, "socket(): \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let (name, isAbstract): (String, Bool) =
            switch endpoint {
            case .path(let path): (path, false)
            case .abstract(let name): (name, true)
            }
        let nameBytes = Array(name.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // An abstract name starts with a NUL byte and is not terminated; a path needs room for its NUL.
        guard nameBytes.count + 1 <= capacity else {
            _ = Glibc.close(descriptor)
            throw DBusError(.badAddress, "The socket name '\(name)' is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let start = isAbstract ? 1 : 0
            for (index, byte) in nameBytes.enumerated() { raw[start + index] = byte }
        }
        // A path counts its terminating NUL; an abstract name counts its leading one: one extra byte either way.
        let length = MemoryLayout<sa_family_t>.size + nameBytes.count + 1
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(length)) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            _ = Glibc.close(descriptor)
            throw DBusError(.noServer, "Cannot connect to the D-Bus socket '\(name)': \(reason)")
        }
        return descriptor
    }

    /// Spec, "Authentication Protocol": a NUL byte, `AUTH EXTERNAL <hex of the uid in ASCII decimal>`, `OK <guid>`,
    /// `BEGIN`. The kernel vouches for the uid (SO_PEERCRED), so there is no secret to send.
    private static func authenticate(_ descriptor: Int32, timeout: Duration) throws {
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        defer {
            var none = timeval(tv_sec: 0, tv_usec: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        }
        let uid = String(getuid()).utf8.map { String($0, radix: 16) }.joined()
        try sendAll(descriptor, [0] + Array("AUTH EXTERNAL \(uid)\r\n".utf8))
        let reply = try readLine(descriptor)
        guard reply.hasPrefix("OK ") else {
            throw DBusError(.authFailed, "The bus refused EXTERNAL authentication: \(reply)")
        }
        try sendAll(descriptor, Array("BEGIN\r\n".utf8))
    }

    /// Reads one `\r\n`-terminated line a byte at a time: the server sends nothing after it until BEGIN.
    private static func readLine(_ descriptor: Int32) throws -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 512 {
            let count = recv(descriptor, &byte, 1, 0)
            guard count == 1 else {
                throw DBusError(.authFailed, "The bus closed or timed out during authentication")
            }
            if byte == UInt8(ascii: "\n"), line.last == UInt8(ascii: "\r") {
                return String(decoding: line.dropLast(), as: UTF8.self)
            }
            line.append(byte)
        }
        throw DBusError(.authFailed, "The bus sent an overlong authentication line")
    }

    static func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw DBusError(.ioError, "send(): \(String(cString: strerror(errno)))")
            }
            offset += sent
        }
    }
}
