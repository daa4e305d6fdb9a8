import DBus
import Foundation
import Glibc

/// Our end of the SOCK_SEQPACKET pair a GATT application hands bluetoothd from `AcquireWrite`: bluetoothd writes
/// each ATT Write Command to it as one packet, in the order the central sent them, and closes its end when the
/// link goes. A plain thread (never a Swift concurrency thread) blocks in recv and yields packets in order.
final class PacketSocket: Sendable {
    let packets: AsyncStream<[UInt8]>
    private let descriptor: OwnedFileDescriptor

    /// Makes the pair; returns the socket kept here and the end to give bluetoothd.
    static func makePair() throws -> (PacketSocket, OwnedFileDescriptor) {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else {
            throw DBusError(name: "org.bluez.Error.Failed", message: "socketpair: \(String(cString: strerror(errno)))")
        }
        return (PacketSocket(fd: fds[0]), OwnedFileDescriptor(taking: fds[1]))
    }

    private init(fd: Int32) {
        descriptor = OwnedFileDescriptor(taking: fd)
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        packets = stream
        let owned = descriptor
        NamedThread.start("peripheral fd") {
            var buffer = [UInt8](repeating: 0, count: 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                continuation.yield(Array(buffer[0..<count]))
            }
            continuation.finish()
            owned.close()
        }
    }

    func shutDown() {
        descriptor.withDescriptor { fd in _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }
}
