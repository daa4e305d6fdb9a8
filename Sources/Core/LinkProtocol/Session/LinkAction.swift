import TetherPrimitives
import TetherSettings
/// An order from the link session to the code around it (§ references in `LinkSession`).
public enum LinkAction: Hashable, Sendable {
    /// Write one ATT value to the RX characteristic without response (§2.1).
    case write([UInt8])
    /// Store these items durably, then call `persisted(_:at:)` (or `persistFailed`). ACKs wait for it (§8.2).
    case persist(PersistBatch)
    /// Call `timerFired(_:at:)` at this instant; replaces an earlier deadline of the same timer.
    case armTimer(LinkTimer, at: Timestamp)
    case cancelTimer(LinkTimer)
    /// Close the BLE connection.
    case disconnect(DisconnectReason)
    /// Something worth logging, counting or showing; changes nothing.
    case report(LinkReport)
}

/// The session's timers. Plain data: the caller keeps one deadline per timer.
public enum LinkTimer: Hashable, Sendable, CaseIterable {
    /// A HELLO, GET_CONFIG or SET_CONFIG is unanswered (§8.7).
    case request
    /// The next time-sync step is due, or the outstanding request has timed out (§9.1).
    case timeSync
    /// A partial frame has stalled (§3.4).
    case stall
}

public enum DisconnectReason: Hashable, Sendable, CustomStringConvertible {
    /// §6.4: no common protocol version.
    case incompatibleVersions(device: ClosedRange<UInt8>)
    /// §8.7: a request went unanswered three times.
    case unresponsive(MessageType)

    public var description: String {
        switch self {
        case .incompatibleVersions(let device): "no common protocol version (device speaks \(device.lowerBound)…\(device.upperBound))"
        case .unresponsive(let type): "device did not answer \(type) after 3 attempts"
        }
    }
}

/// What the gateway cannot do when a store fails (§8.10).
public enum StorageFailure: Hashable, Sendable {
    /// Database at its cap, disk at its floor, or SQLITE_FULL / an I/O error.
    case storageFull
}

/// Items to store in one transaction, and the frames whose acknowledgement waits for it.
public struct PersistBatch: Hashable, Sendable {
    public typealias ID = UInt64
    public var id: ID
    public var items: [PersistItem]

    public init(id: ID, items: [PersistItem]) {
        self.id = id
        self.items = items
    }
}

public enum PersistItem: Hashable, Sendable {
    case deviceInfo(DeviceInfo, negotiatedVersion: UInt8)
    case hit(StoredHit)
    case battery(serial: String, BatteryStatus, receivedAt: Timestamp)
    case sleep(serial: String, SleepNotice, receivedAt: Timestamp)
    case reportedConfig(serial: String, DeviceConfig)
    /// A new anchor: the store saves it and re-derives the times of the boot's events (§9.7).
    case anchor(serial: String, TimeAnchor)
}

/// A HIT_EVENT with its identity widened (§8.9, §9.8) and its time derived when its boot has an anchor (§9.7).
public struct StoredHit: Hashable, Sendable {
    public var key: EventKey
    public var ticks: Int64
    public var durationMilliseconds: UInt16
    public var intensity: UInt8
    public var receivedAt: Timestamp
    public var time: TimeEstimate?

    public init(key: EventKey, ticks: Int64, durationMilliseconds: UInt16, intensity: UInt8, receivedAt: Timestamp, time: TimeEstimate?) {
        self.key = key
        self.ticks = ticks
        self.durationMilliseconds = durationMilliseconds
        self.intensity = intensity
        self.receivedAt = receivedAt
        self.time = time
    }
}

/// Facts worth a log line, a metric or a replay row.
public enum LinkReport: Hashable, Sendable {
    case negotiated(version: UInt8, DeviceInfo)
    case rebootDetected(serial: String, previousBoot: UInt16?, boot: UInt16)
    case identityChanged(previous: String, now: String)
    /// Bytes from the device that were not a valid frame or message; `nack` is what was sent back, if anything.
    case rejected(FrameError, nack: Nack?)
    case nackReceived(Nack)
    case acknowledged(Ack)
    case duplicate(EventKey)
    /// A reliable frame arrived again after it was handled (a retransmission or a duplicated notification).
    case repeatedFrame(SequenceNumber)
    case anchorAdded(TimeAnchor, samples: Int)
    case timeSyncLost(request: SequenceNumber)
    case storageRefused(frames: Int)
    /// Desired settings out of §7.11's ranges: not stored as desired, never sent.
    case desiredConfigRefused(version: UInt32, DeviceSettings.InvalidSetting)
    case bufferOverrun(droppedBytes: Int)
    /// Settings traffic (§7.11), for a debug log that explains where a reported version went.
    case settings(SettingsTraffic)
}

/// SET_CONFIG and CONFIG_DATA as the session handled them, with versions and frame numbers.
public enum SettingsTraffic: Hashable, Sendable {
    /// SET_CONFIG written; `attempt` counts from 1 (a retry repeats the sequence number, §8.7).
    case setConfigSent(DeviceConfig, sequence: SequenceNumber, attempt: Int)
    /// A new CONFIG_DATA went to the store; it is ACKed once its batch commits (§8.2).
    case configDataReceived(DeviceConfig, sequence: SequenceNumber)
    /// A CONFIG_DATA under a number already handled or being stored: taken for the frame already received, so
    /// its content is not stored again (§8.3).
    case configDataRepeated(DeviceConfig, sequence: SequenceNumber)
}
