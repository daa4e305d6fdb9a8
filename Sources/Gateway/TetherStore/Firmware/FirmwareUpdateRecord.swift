import Foundation
import GRDB

/// A row of `firmwareUpdate` (migration v12): one firmware update tetherd was asked to make, where it is, and how it
/// ended. See `FirmwareUpdateJournal`.
public struct FirmwareUpdateRecord: Codable, Hashable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "firmwareUpdate"

    /// Where an update is (docs/design/ota.md, "The update flow", rules 2–5). The journal only moves forward.
    public enum Phase: String, Codable, Hashable, Sendable, CaseIterable, Comparable {
        /// Rule 2: the image is going to the device's secondary slot; `bytesAcknowledged` is the device's offset.
        case uploading
        /// Rule 3–4: marked for test and reset sent; waiting for the device to come back on the new image.
        case testing
        /// Rule 5: the new image runs on test and must keep running for `proveForMilliseconds`.
        case proving
        /// Rule 5: proved; the confirmation is being sent.
        case confirming
        case finished

        public static func < (lhs: Phase, rhs: Phase) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    public enum Outcome: String, Codable, Hashable, Sendable, CaseIterable {
        /// The new image runs, confirmed: permanent.
        case confirmed
        /// The new image runs on test, as asked (`leaveInTest`): MCUboot reverts it at the next reset.
        case runningInTest = "running-in-test"
        /// The device already ran the image, confirmed: nothing was sent.
        case alreadyRunning = "already-running"
        /// The device came back on another image: the new one did not boot, or crashed before it was confirmed.
        case reverted
        /// The device stopped answering, refused a request, or the link could not be had.
        case failed
        /// A technician cancelled it.
        case cancelled

        /// The device runs the update's image after an update that ended so.
        public var deviceRunsImage: Bool {
            switch self {
            case .confirmed, .runningInTest, .alreadyRunning: true
            case .reverted, .failed, .cancelled: false
            }
        }
    }

    public var id: Int64?
    /// The update's id (UUIDv7, lowercase), as the control API and its signals name it.
    public var uid: String
    /// The device's identity address (`AA:BB:CC:DD:EE:FF`).
    public var address: String
    public var imageVersion: String
    /// The MCUboot image's SHA256 TLV: what the device reports for the image once it holds it.
    public var imageHash: Data
    /// SHA-256 of the whole image file: the upload's `sha`, by which the device resumes an interrupted upload.
    public var uploadSha256: Data
    public var imageBytes: Int
    /// Where tetherd keeps its copy of the image for the update's life (a resumed update reads it again).
    public var imagePath: String
    public var leaveInTest: Bool
    public var proveForMilliseconds: Int64
    public var phase: Phase
    /// The device's offset after the last chunk it acknowledged (rule 2).
    public var bytesAcknowledged: Int
    /// How many times the update was (re)started: 1 for one that ran through, more after a disconnect or restart.
    public var attempts: Int
    public var outcome: Outcome?
    /// Why it failed, reverted or was cancelled, for a technician.
    public var message: String?
    public var createdAt: Int64
    public var updatedAt: Int64
    public var finishedAt: Int64?

    public enum Columns {
        public static let id = Column("id")
        public static let uid = Column("uid")
        public static let address = Column("address")
        public static let phase = Column("phase")
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
