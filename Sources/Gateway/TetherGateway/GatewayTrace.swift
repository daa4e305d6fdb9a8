import HealthProfiles
import LinkProtocol
import TetherStore

/// What the gateway did on the wire and in the store, in order, per device: for tests that check the ACK
/// discipline (no ACK before the durable commit) and for debugging. Off unless a handler is configured.
public enum GatewayTrace: Hashable, Sendable {
    /// One ATT notification received from TX (only for links the session is listening to).
    case received(address: String, [UInt8])
    /// A batch went to the group committer (tetherd times the ACK latency from here to `committed`).
    case submitted(address: String, batch: PersistBatch.ID)
    /// One ATT value written to RX.
    case wrote(address: String, [UInt8])
    /// A batch was durably committed (the completion came back from the committer).
    case committed(address: String, batch: PersistBatch.ID, storedEvents: [EventKey])
    /// A batch was refused; nothing of it is acknowledged.
    case persistFailed(address: String, batch: PersistBatch.ID, StoreError)
    /// SET_CONFIG / CONFIG_DATA on the link (§7.11), as the session handled them.
    case settings(address: String, SettingsTraffic)
    /// A CONFIG_DATA's config was durably committed in this batch; its ACK follows.
    case settingsStored(address: String, batch: PersistBatch.ID, DeviceConfig)
    /// A health device's acknowledged records were deleted from it, or the deletion was refused, interrupted or
    /// not made (RecordTransfer rule 7; only for devices `healthRecordDeletion` allows).
    case healthRecordDeletion(HealthRecordDeletion)
    /// How the look for records that vanished from a health device went (RecordTransfer rule 8; only for devices
    /// `healthVanishedRecordAudit` allows).
    case healthRecordAudit(HealthRecordAudit)
    /// A multi-user health device's answer to the gateway's Consent for one user (User Data Service): the user's
    /// index and the outcome, never the code. tetherd logs it.
    case userConsent(address: String, userIndex: UInt8, UserConsentProcedure.Outcome)
}
