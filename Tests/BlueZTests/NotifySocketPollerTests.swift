import DBus
import Foundation
import Glibc
import Testing
import TetherTestSupport

@testable import BlueZ

/// The notify sockets' one reader thread (NotifySocketPoller): each socket's packets reach its own stream, in
/// order, and nothing of another's; a socket ending ends only its stream; however many sockets are open, one thread
/// reads them. The sockets are SOCK_SEQPACKET socketpairs, as BlueZ's AcquireNotify hands out (src/gatt-client.c,
/// create_sock), with this test as bluetoothd's end.
@Suite(.serialized)
struct NotifySocketPollerTests {
    /// A socketpair: `acquisition` reads one end the way tetherd reads BlueZ's, `peer` is bluetoothd's end.
    struct Pair {
        let acquisition: NotifyAcquisition
        let peer: Int32

        init(mtu: Int = 64) throws {
            var ends: [Int32] = [-1, -1]
            let made = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends)
            try #require(made == 0, "socketpair: \(String(cString: strerror(errno)))")
            acquisition = NotifyAcquisition(descriptor: OwnedFileDescriptor(taking: ends[0]), mtu: mtu)
            peer = ends[1]
        }

        func notify(_ value: [UInt8]) throws {
            let sent = value.withUnsafeBytes { send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            try #require(sent == value.count, "send: \(String(cString: strerror(errno)))")
        }
    }

    /// Collects `count` values from `stream`, or all of them when it finishes first; bounded by `seconds`.
    static func collect(_ stream: NotificationBatches, count: Int, seconds: Double = 30) async throws -> [[UInt8]] {
        try await withThrowingTaskGroup(of: [[UInt8]]?.self) { group in
            group.addTask {
                var values: [[UInt8]] = []
                for await batch in stream {
                    values += batch
                    if values.count >= count { break }
                }
                return values
            }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let values = first else { throw WaitTimeout(what: "\(count) notifications") }
            return values
        }
    }

    @Test func eachSocketsValuesReachItsOwnStreamInOrderThroughOneThread() async throws {
        let pairs = try (0..<8).map { _ in try Pair() }
        defer { for pair in pairs { close(pair.peer) } }
        // Interleaved: value k of socket s is [s, k]; socket 0 sends a burst longer than several batches.
        for k in 0..<200 {
            for (s, pair) in pairs.enumerated() where s == 0 || k < 5 {
                try pair.notify([UInt8(s), UInt8(k)])
            }
        }
        for (s, pair) in pairs.enumerated() {
            let expected = (0..<(s == 0 ? 200 : 5)).map { [UInt8(s), UInt8($0)] }
            #expect(try await Self.collect(pair.acquisition.packets, count: expected.count) == expected)
        }
        // Eight sockets open (and every other test's in this process), one reader: a thread per socket was the old way.
        #expect(NotifySocketPoller.shared.readerThreadsStarted.load(ordering: .relaxed) == 1)
    }

    @Test func aPeerThatClosesEndsOnlyItsOwnStream() async throws {
        let closing = try Pair()
        let staying = try Pair()
        defer { close(staying.peer) }
        try closing.notify([1])
        close(closing.peer)
        // What was queued before the close still arrives, then the stream finishes.
        #expect(try await Self.collect(closing.acquisition.packets, count: .max) == [[1]])
        try staying.notify([2])
        #expect(try await Self.collect(staying.acquisition.packets, count: 1) == [[2]])
    }

    @Test func closingTheAcquisitionEndsItsStreamAndTheSocketReachesThePeer() async throws {
        let pair = try Pair()
        defer { close(pair.peer) }
        try pair.notify([7, 7])
        // One consumer for the stream's whole life: it sees the value, then the end that close() makes.
        let consumer = Task { try await Self.collect(pair.acquisition.packets, count: .max) }
        pair.acquisition.close()
        #expect(try await consumer.value == [[7, 7]])
        // bluetoothd's end sees the socket close: that is what ends the acquisition in BlueZ (a read returns 0).
        var byte: UInt8 = 0
        var status = pollfd(fd: pair.peer, events: Int16(POLLIN), revents: 0)
        #expect(poll(&status, 1, 30_000) == 1)
        #expect(recv(pair.peer, &byte, 1, 0) == 0)
    }
}
