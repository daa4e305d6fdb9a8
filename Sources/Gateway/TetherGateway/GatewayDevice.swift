import BlueZ
import LinkProtocol
import TetherPrimitives

/// What the gateway knows about one device, as the control API's `Device` record shows it
/// (docs/specs/control-api.md "Device"). A value: take a fresh one from `Gateway.devices()` or `changes()`.
public struct GatewayDevice: Hashable, Sendable {
    /// The control API's `state`.
    public enum State: String, Hashable, Sendable {
        /// Not wanted, or waiting for a connect slot.
        case idle
        case connecting
        case connected
        /// Waiting out a backoff after a failed connect.
        case backoff
        case disconnecting
        /// Clearing BlueZ's stale state after InProgress (Disconnect, RemoveDevice).
        case removing
    }

    /// How notifications reach the gateway (control API `notify_method`).
    public enum NotifyMethod: String, Hashable, Sendable {
        case acquireNotify = "acquire-notify"
        case startNotify = "start-notify"
    }

    /// BLE address as BlueZ writes it (`C0:54:45:00:00:01`); the key until the serial is known.
    public var address: String
    /// From DEVICE_INFO (link protocol §7.2), or from the registry.
    public var serial: String?
    public var name: String?
    /// Adopted by this gateway (paired through it or paired in the registry).
    public var paired: Bool
    public var state: State
    /// Consecutive failed attempts (Connect, or link set-up) since the last healthy link.
    public var attempts: Int
    /// The last connect failure or disconnect reason, for people.
    public var lastError: String?
    /// When a notification last arrived (or the device was last seen on the air).
    public var lastSeenAt: Timestamp?
    public var rssi: Int16?
    /// Firmware version (`1.4.0`) from DEVICE_INFO.
    public var firmware: String?
    public var batteryPercent: UInt8?
    /// Events stored in the database for this device (durably committed).
    public var eventsStored: UInt64
    /// ATT values received from TX and written to RX since the gateway started.
    public var framesReceived: UInt64
    public var framesSent: UInt64
    public var notifyMethod: NotifyMethod?
    /// ATT MTU of the current (or last) link.
    public var mtu: Int?
    /// Reconnections after a link was established (drops, reboots, bluetoothd restarts).
    public var linksEstablished: UInt64
    /// What holds the device, its sessions set aside (a firmware update): `Gateway.hold`.
    public var heldFor: String?

    public init(address: String) {
        self.address = address
        paired = false
        state = .idle
        attempts = 0
        eventsStored = 0
        framesReceived = 0
        framesSent = 0
        linksEstablished = 0
    }
}

/// A device seen while scanning (control API "Scan result").
public struct ScanResult: Hashable, Sendable {
    public var address: String
    public var name: String?
    public var rssi: Int16?
    /// In the registry (the gateway has met it before).
    public var known: Bool
    public var paired: Bool
    public var lastSeenAt: Timestamp

    public init(address: String, name: String?, rssi: Int16?, known: Bool, paired: Bool, lastSeenAt: Timestamp) {
        self.address = address
        self.name = name
        self.rssi = rssi
        self.known = known
        self.paired = paired
        self.lastSeenAt = lastSeenAt
    }
}

/// The gateway as a whole (the BlueZ part of the control API's `Status`).
public struct GatewayStatus: Hashable, Sendable {
    /// BlueZ's objects are read and the pairing agent's registration has an outcome (registered, or refused:
    /// then `agentError` says why and `pair` fails with it).
    public var bluezAvailable: Bool
    /// Why BlueZ refused the pairing agent, if it did (retried when bluetoothd restarts).
    public var agentError: String?
    public var adapter: String
    public var scanning: Bool
    public var devicesKnown: Int
    public var devicesConnected: Int
    /// Durable events committed by this gateway since it started.
    public var eventsStoredSinceStart: UInt64
}
