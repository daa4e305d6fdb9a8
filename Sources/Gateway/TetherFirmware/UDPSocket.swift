#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A UDP socket, blocking, with a bounded wait for each datagram: the one place Tether opens a datagram socket
/// (the SMP UDP transport, and the simulated device that serves it). IPv4 and IPv6 through getaddrinfo.
public final class UDPSocket: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible, Hashable {
        public let description: String
        init(_ what: String, _ code: Int32 = errno) { description = "\(what): \(String(cString: strerror(code)))" }
        init(message: String) { description = message }
    }

    /// A peer's address as the kernel gave it.
    public struct Address: @unchecked Sendable {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    }

    private let descriptor: Int32

    /// A socket bound to `host`:`port` (port 0: the kernel picks one; see `localPort`). Without SO_REUSEADDR: UDP
    /// has no TIME_WAIT to wait out, and with it Linux lets two such sockets share a port (udp_lib_get_port treats
    /// them as not conflicting, even for a port it picks for port 0), so two simulated devices, or two tests' devices,
    /// could split each other's datagrams. A port in use is an error instead.
    public init(bindHost host: String, port: UInt16) throws(Failure) {
        descriptor = try Self.open(host, port: port, "bind") { descriptor, address, length in
            bind(descriptor, address, length)
        }
    }

    /// A socket connected to `host`:`port`: `send` goes there and only its datagrams are received.
    public init(connectTo host: String, port: UInt16) throws(Failure) {
        descriptor = try Self.open(host, port: port, "connect") { descriptor, address, length in
            connect(descriptor, address, length)
        }
    }

    /// A datagram socket for `host`:`port`'s address family, given to `attach` (bind or connect) with the address;
    /// closed again if that fails.
    private static func open(
        _ host: String, port: UInt16, _ what: String,
        attach: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) throws(Failure) -> Int32 {
        let address = try resolve(host, port: port)
        let descriptor = socket(Int32(address.storage.ss_family), Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket") }
        var storage = address.storage
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { attach(descriptor, $0, address.length) }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw Failure("\(what) \(host):\(port)", code)
        }
        return descriptor
    }

    deinit { close(descriptor) }

    public var localPort: UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { pointer in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    /// Sends one datagram on a connected socket.
    public func send(_ bytes: [UInt8]) throws(Failure) {
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else { throw Failure("send") }
    }

    /// Sends one datagram to `address` (an answer to what `receive` returned).
    public func send(_ bytes: [UInt8], to address: Address) throws(Failure) {
        var storage = address.storage
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(descriptor, buffer.baseAddress, buffer.count, 0, $0, address.length) }
            }
        }
        guard sent == bytes.count else { throw Failure("sendto") }
    }

    /// The next datagram and its sender, or nil when none arrives within `milliseconds`.
    public func receive(waitingAtMost milliseconds: Int32, maxSize: Int = 65_536) throws(Failure) -> ([UInt8], Address)? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, milliseconds)
        if ready < 0 {
            if errno == EINTR { return nil }
            throw Failure("poll")
        }
        guard ready > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: maxSize)
        var address = Address()
        let count = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &address.storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, bytes.baseAddress, bytes.count, 0, $0, &address.length) }
            }
        }
        if count < 0 {
            // ECONNREFUSED: an earlier datagram met a closed port (ICMP); the caller's retries deal with the silence.
            if errno == ECONNREFUSED || errno == EINTR { return nil }
            throw Failure("recvfrom")
        }
        return (Array(buffer[..<count]), address)
    }

    private static func resolve(_ host: String, port: UInt16) throws(Failure) -> Address {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw Failure(message: "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var address = Address()
        address.length = first.pointee.ai_addrlen
        withUnsafeMutableBytes(of: &address.storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
        }
        return address
    }
}
