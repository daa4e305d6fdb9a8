import Foundation
import SMPDeviceModel
import TetherFirmware

/// The simulated MCUmgr device on a UDP socket, as Zephyr's UDP transport serves SMP (subsys/mgmt/mcumgr/transport/
/// src/smp_udp.c: one SMP message per datagram, the answer sent back to the datagram's sender, port 1337 by default).
/// A datagram that is not one whole request is dropped, as Zephyr drops it.
///
/// The device runs on a thread of its own (blocking receive with a short bounded wait, so that `stop` ends it), never
/// on Swift's concurrency pool. Tests read and change the device between datagrams through `withDevice`.
public final class SMPUDPDeviceServer: @unchecked Sendable {
    public static let defaultPort: UInt16 = 1337

    private let socket: UDPSocket
    private let lock = NSLock()
    private var device: SMPDevice
    private var stopping = false
    private var answersToDrop = 0
    private var received = 0
    private var answered = 0
    private var dropEvery = 0
    private let finished = DispatchSemaphore(value: 0)
    private var thread: Thread?

    public let host: String
    public var port: UInt16 { socket.localPort }

    /// Binds `host`:`port` (0: any free port).
    public init(device: SMPDevice, host: String = "127.0.0.1", port: UInt16 = SMPUDPDeviceServer.defaultPort) throws {
        self.device = device
        self.host = host
        socket = try UDPSocket(bindHost: host, port: port)
    }

    /// Reads or changes the device between two datagrams.
    public func withDevice<T>(_ body: (inout SMPDevice) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&device)
    }

    /// Datagrams received so far (answered or not).
    public var datagramsReceived: Int {
        lock.lock()
        defer { lock.unlock() }
        return received
    }

    /// The next `count` answers are lost on the way back (the request is still carried out): UDP loses datagrams.
    public func dropAnswers(_ count: Int) {
        lock.lock()
        answersToDrop += count
        lock.unlock()
    }

    /// Every `n`th answer from now on is lost (0: none), for loss in the middle of an upload.
    public func dropAnswers(every n: Int) {
        lock.lock()
        dropEvery = n
        answered = 0
        lock.unlock()
    }

    public func start() {
        let thread = Thread { [self] in
            serve()
            finished.signal()
        }
        thread.name = "smp-udp-device"
        self.thread = thread
        thread.start()
    }

    /// Ends the serving thread and waits for it (at most one receive wait, 50 ms).
    public func stop() {
        lock.lock()
        let running = thread != nil && !stopping
        stopping = true
        lock.unlock()
        if running { finished.wait() }
    }

    deinit { stop() }

    /// Serves until `stop` (the executable's main loop; `start` runs it on a thread).
    public func serve() {
        while true {
            lock.lock()
            let stop = stopping
            lock.unlock()
            if stop { return }
            guard let incoming = try? socket.receive(waitingAtMost: 50) else { continue }
            let (datagram, sender) = incoming
            lock.lock()
            received += 1
            let answer = device.handle(datagram)
            let busy = device.lastBusyTime
            if answer != nil { answered += 1 }
            let dropped = answer != nil && (answersToDrop > 0 || (dropEvery > 0 && answered % dropEvery == 0))
            if dropped, answersToDrop > 0 { answersToDrop -= 1 }
            lock.unlock()
            // The flash work happens inside the request's handler: nothing else is received or answered meanwhile
            // (datagrams wait in the socket's buffer, as in the device's network buffers).
            if busy > .zero { Thread.sleep(forTimeInterval: Double(busy.components.seconds) + Double(busy.components.attoseconds) / 1e18) }
            if let answer, !dropped { try? socket.send(answer, to: sender) }
        }
    }
}
