import TetherPrimitives
/// The gateway side of the device link protocol for one device, sans I/O.
///
/// Facts go in (`connected`, `received`, `persisted`, `timerFired`, `disconnected`, each with the instant it
/// happened); orders come out as `LinkAction`s (`write`, `persist`, `armTimer`, `disconnect`, `report`). The session
/// owns no socket, no database and no clock, so tests, replays and the daemon drive the very same code.
///
/// One session lives as long as the gateway cares about the device, across connections: the dedup history and
/// the clock anchors carry over, everything of one connection lives in the `connected` phase and is dropped with it.
///
/// This file holds the phases and the inputs; each input's rule per phase is the `switch state` in it, and the
/// rules per frame are the `switch (handshake, message)` in `handle`. The jobs the rules call on live beside it:
/// `+Handshake` (§6, §11), `+Reliable` (§8: the receive window, ACK/NACK, batches to store), `+TimeSync` (§9),
/// `+Requests` (§8.7: HELLO, GET_CONFIG, SET_CONFIG) and `+Frames` (decoding, and frames out).
public struct LinkSession: Sendable {
    /// The phases as the code around the session sees them.
    public enum Phase: Hashable, Sendable {
        case idle
        /// HELLO sent, waiting for DEVICE_INFO (§11).
        case hello
        case established(version: UInt8)
        /// Disconnect ordered; waiting for `disconnected`.
        case closing
    }

    /// The phase with the data it owns: a link's data exists only while there is a link, so no code can reach it
    /// in another phase.
    enum State: Sendable {
        case idle
        /// The BLE link is up; `Connection.handshake` says whether HELLO is answered.
        case connected(Connection)
        /// Disconnect ordered; waiting for `disconnected`.
        case closing
    }

    public let configuration: LinkSessionConfiguration
    private var state: State = .idle
    public internal(set) var history: DeviceHistory
    public internal(set) var clock: DeviceClock
    public internal(set) var deviceInfo: DeviceInfo?
    public internal(set) var reportedConfig: DeviceConfig?
    public private(set) var desiredConfig: DeviceConfig?

    var nextBatchID: PersistBatch.ID = 1
    /// Events whose store is in progress, and the batch that carries each. Kept outside the connection: a store
    /// that completes after a disconnect still stored them (the history must learn it), and a retransmission on
    /// the next connection must wait for that store instead of starting a second one (§8.8).
    var inFlightEvents: [EventKey: PersistBatch.ID] = [:]
    var batchEvents: [PersistBatch.ID: [EventKey]] = [:]
    /// Anchors in a batch whose store has not completed, and anchors whose batch was refused: a refused anchor
    /// rides along with the next batch, so the store's clock never lacks one that event times were derived from.
    var batchAnchors: [PersistBatch.ID: [TimeAnchor]] = [:]
    var unsavedAnchors: [TimeAnchor] = []
    var actions: [LinkAction] = []

    public init(configuration: LinkSessionConfiguration = LinkSessionConfiguration(), history: DeviceHistory = DeviceHistory(), clock: DeviceClock = DeviceClock(), desiredConfig: DeviceConfig? = nil) {
        self.configuration = configuration
        self.history = history
        self.clock = clock
        self.desiredConfig = desiredConfig
    }

    public var phase: Phase {
        switch state {
        case .idle: .idle
        case .connected(let connection):
            switch connection.handshake {
            case .hello: .hello
            case .established(let version): .established(version: version)
            }
        case .closing: .closing
        }
    }

    // MARK: - Inputs

    /// The BLE link is up and the gateway is subscribed to TX (§2.2).
    public mutating func connected(mtu: Int, at now: Timestamp) -> [LinkAction] {
        switch state {
        case .idle, .closing:
            break
        case .connected:
            // A new link without a disconnect in between (bluetoothd restarted under us): the old one is gone.
            endConnection()
        }
        state = .connected(Connection(valueSize: FrameEncoder.attValueSize(mtu: mtu), windowSize: Int(configuration.window)))
        withConnection { session, connection in
            // §2.2: the gateway speaks first, after subscribing.
            session.startRequest(.hello(Hello(versions: session.configuration.versions, window: session.configuration.window)), &connection, at: now)
            return .kept
        }
        return drainActions()
    }

    /// BlueZ reported a new MTU.
    public mutating func mtuChanged(_ mtu: Int) {
        switch state {
        case .idle, .closing:
            break
        case .connected:
            withConnection { _, connection in
                connection.valueSize = FrameEncoder.attValueSize(mtu: mtu)
                return .kept
            }
        }
    }

    /// One ATT notification from TX.
    public mutating func received(_ value: [UInt8], at now: Timestamp) -> [LinkAction] {
        receivedSpecialized(value, at: now)
    }

    /// One ATT notification from TX, from any byte collection.
    public mutating func received(_ value: some Collection<UInt8>, at now: Timestamp) -> [LinkAction] {
        receivedSpecialized(value, at: now)
    }

    // A concrete `[UInt8]` entry point: called across modules, the generic one runs unspecialised (measured: a
    // quarter of the decode time went to witness calls).
    @inline(__always)
    private mutating func receivedSpecialized(_ value: some Collection<UInt8>, at now: Timestamp) -> [LinkAction] {
        switch state {
        case .idle, .closing:
            return []  // bytes after we gave the link up carry nothing we may act on
        case .connected:
            withConnection { session, connection in
                let dropped = connection.decoder.append(value)
                if dropped > 0 { session.actions.append(.report(.bufferOverrun(droppedBytes: dropped))) }
                return session.decodeBuffered(&connection, at: now)
            }
        }
        return drainActions()
    }

    /// The store committed a batch durably: its frames may now be acknowledged (§8.2).
    public mutating func persisted(_ batch: PersistBatch.ID, at now: Timestamp) -> [LinkAction] {
        batchStored(batch)
        switch state {
        case .idle, .closing:
            break  // no frame of this link waits for it; the device will retransmit and be re-ACKed
        case .connected:
            withConnection { session, connection in
                session.acknowledgeStored(batch, &connection)
                return .kept
            }
        }
        return drainActions()
    }

    /// The store could not commit a batch (§8.10): nothing in it is acknowledged; the device keeps it.
    public mutating func persistFailed(_ batch: PersistBatch.ID, reason: StorageFailure, at now: Timestamp) -> [LinkAction] {
        batchRefused(batch)
        switch state {
        case .idle, .closing:
            break  // no frame of this link waits for it
        case .connected:
            withConnection { session, connection in
                session.refuseStored(batch, reason: reason, &connection)
                return .kept
            }
        }
        return drainActions()
    }

    public mutating func timerFired(_ timer: LinkTimer, at now: Timestamp) -> [LinkAction] {
        switch state {
        case .idle, .closing:
            return []  // every timer belongs to a link, and its end cancelled them
        case .connected:
            withConnection { session, connection in
                let fate: LinkFate
                switch timer {
                case .request:
                    fate = session.retryRequest(&connection, at: now)
                case .timeSync:
                    session.advanceTimeSync(&connection, at: now)
                    fate = .kept
                case .stall:
                    connection.stallArmed = false
                    if let error = connection.decoder.abandonStalledFrame() { session.reject(error, &connection) }
                    fate = session.decodeBuffered(&connection, at: now)
                }
                return fate
            }
        }
        return drainActions()
    }

    /// The link is down. Unacknowledged frames are the device's to resend (§11).
    public mutating func disconnected(at now: Timestamp) -> [LinkAction] {
        switch state {
        case .idle, .closing:
            break
        case .connected:
            endConnection()
        }
        state = .idle
        return drainActions()
    }

    /// Settings a technician or the backend wants on the device (§7.11). Sent now if connected, else on connect.
    /// Settings outside §7.11's ranges are refused here, with the key named, and never sent.
    public mutating func desiredConfigChanged(_ config: DeviceConfig, at now: Timestamp) -> [LinkAction] {
        do {
            try config.settings.validate()
        } catch {
            actions.append(.report(.desiredConfigRefused(version: config.version, error)))
            return drainActions()
        }
        desiredConfig = config
        switch state {
        case .idle, .closing:
            break  // sent when the next link's CONFIG_DATA reports another version
        case .connected:
            withConnection { session, connection in
                switch connection.handshake {
                case .hello: break  // the device's settings are asked for once it has answered HELLO
                case .established: session.applyDesiredConfigIfNeeded(&connection, at: now)
                }
                return .kept
            }
        }
        return drainActions()
    }

    // MARK: - The link's data

    /// Runs one step on the link's data, moved out of `state` for the step (changed in place inside the enum, its
    /// buffers would be copied on every notification) and put back after it, with this step's frames written.
    /// A step that gave the link up leaves the session `closing`. During the step `state` says `idle`; no step reads
    /// it.
    @inline(__always)
    private mutating func withConnection(_ step: (inout LinkSession, inout Connection) -> LinkFate) {
        guard case .connected(var connection) = state else { return }
        state = .idle
        switch step(&self, &connection) {
        case .kept:
            flushWrites(&connection)
            state = .connected(connection)
        case .givenUp:
            state = .closing
        }
    }

    /// Ends the link's part of the session when the link is gone or replaced.
    private mutating func endConnection() {
        withConnection { session, connection in
            session.closeConnection(&connection)
            return .givenUp
        }
    }

    /// Drops the link's data: its frames are written, the burst it cut short anchored, its timers cancelled.
    mutating func closeConnection(_ connection: inout Connection) {
        flushWrites(&connection)
        anchorFastestSample(&connection)  // §9.3: a burst cut short by the link's end
        if connection.request != nil { actions.append(.cancelTimer(.request)) }
        if connection.stallArmed { actions.append(.cancelTimer(.stall)) }
        actions.append(.cancelTimer(.timeSync))
    }

    /// Orders the disconnect. The link's frames (a NACK saying why) are written first: nothing may be written
    /// after the order.
    mutating func giveUp(_ connection: inout Connection, _ reason: DisconnectReason) -> LinkFate {
        closeConnection(&connection)
        actions.append(.disconnect(reason))
        return .givenUp
    }

    private mutating func drainActions() -> [LinkAction] {
        defer { actions.removeAll(keepingCapacity: true) }
        return actions
    }
}

// MARK: - Per-connection state

extension LinkSession {
    /// Everything of one connection; dropped when the link ends.
    struct Connection: Sendable {
        enum Handshake: Hashable, Sendable {
            /// HELLO sent, waiting for DEVICE_INFO (§11).
            case hello
            case established(version: UInt8)
        }

        var handshake = Handshake.hello
        var valueSize: Int
        var decoder = FrameDecoder()
        var nextSequence = SequenceNumber(0)
        var window: ReceiveWindow
        /// Frames of this link whose acknowledgement waits for a batch.
        var awaiting: [PersistBatch.ID: [SequenceNumber]] = [:]
        var request: OutstandingRequest?
        var queuedRequests: [LinkMessage] = []
        var timeSync = TimeSyncState(remaining: 0, inBurst: false)
        var outgoing: [UInt8] = []
        var stallArmed = false

        init(valueSize: Int, windowSize: Int) {
            self.valueSize = valueSize
            self.window = ReceiveWindow(size: windowSize)
        }

        /// §5.1: every gateway frame takes the next number.
        mutating func allocateSequence() -> SequenceNumber {
            defer { nextSequence = nextSequence.next }
            return nextSequence
        }
    }

    /// What a step did to the link: kept it, or gave it up (ordered the disconnect). Every step that can give the
    /// link up returns it, so the code after it cannot go on using a link that is gone.
    enum LinkFate: Sendable {
        case kept
        case givenUp
    }
}
