import DBus
import SMP
import TetherFirmware
import TetherStore
import TetherPrimitives

/// The firmware records of docs/specs/control-api.md, "Firmware updates".
extension ControlRecords {
    /// `runningVersion`: in `FirmwareUpdateFinished`, the version the device itself reports running at the end
    /// (SMP's notation, `2.0.1.99`), where `image_version` is the image header's (`2.0.1+99`).
    static func firmwareUpdate(_ record: FirmwareUpdateRecord, runningVersion: String? = nil) -> DBusValue {
        dictionary([
            "running_version": runningVersion.map { .string($0) },
            "uid": .string(record.uid),
            "address": .string(record.address),
            "image_version": .string(record.imageVersion),
            "image_hash": .string(Hex.encode(record.imageHash)),
            "image_bytes": .uint32(UInt32(clamping: record.imageBytes)),
            "leave_in_test": .bool(record.leaveInTest),
            "prove_for_ms": .int64(record.proveForMilliseconds),
            "phase": .string(record.phase.rawValue),
            "bytes_acknowledged": .uint32(UInt32(clamping: record.bytesAcknowledged)),
            "attempts": .uint32(UInt32(clamping: record.attempts)),
            "outcome": record.outcome.map { .string($0.rawValue) },
            "message": record.message.map { .string($0) },
            "created_at": .int64(record.createdAt),
            "updated_at": .int64(record.updatedAt),
            "finished_at": record.finishedAt.map { .int64($0) },
        ])
    }

    /// One step of an update in flight: `event` names it, the other fields are that step's.
    static func firmwareProgress(uid: String, device: String, _ event: FirmwareUpdateProcedure.Event) -> DBusValue {
        var fields: [String: DBusValue?] = ["uid": .string(uid), "address": .string(device)]
        switch event {
        case .verified(let version, let hash):
            fields["event"] = .string("verified")
            fields["image_version"] = .string(version)
            fields["image_hash"] = .string(Hex.encode(hash))
        case .parameters(let parameters):
            fields["event"] = .string("parameters")
            fields["buf_size"] = .uint32(UInt32(clamping: parameters.bufferSize))
            fields["buf_count"] = .uint32(UInt32(clamping: parameters.bufferCount))
        case .progress(let progress):
            fields["event"] = .string("progress")
            fields["confirmed_bytes"] = .uint32(UInt32(clamping: progress.confirmedBytes))
            fields["total_bytes"] = .uint32(UInt32(clamping: progress.totalBytes))
        case .uploaded(let bytes, let seconds):
            fields["event"] = .string("uploaded")
            fields["total_bytes"] = .uint32(UInt32(clamping: bytes))
            fields["seconds"] = .double(seconds)
        case .markedForTest: fields["event"] = .string("marked-for-test")
        case .resetSent: fields["event"] = .string("reset-sent")
        case .running(let slot):
            fields["event"] = .string("running")
            fields["image_version"] = .string(slot.version)
            fields["image_hash"] = slot.hash.map { .string(Hex.encode($0)) }
            fields["confirmed"] = .bool(slot.confirmed)
        case .proving(let seconds):
            fields["event"] = .string("proving")
            fields["seconds"] = .double(seconds)
        case .confirmed: fields["event"] = .string("confirmed")
        }
        return dictionary(fields)
    }

    /// A device's image slots as `FirmwareCommand` answers them (SMP image state, Zephyr's img_mgmt).
    static func firmwareSlots(_ state: SMPImageState) -> DBusValue {
        list(state.images.map { slot in
            dictionary([
                "image": .uint32(slot.image),
                "slot": .uint32(slot.slot),
                "version": .string(slot.version),
                "hash": slot.hash.map { .string(Hex.encode($0)) },
                "active": .bool(slot.active),
                "confirmed": .bool(slot.confirmed),
                "pending": .bool(slot.pending),
                "permanent": .bool(slot.permanent),
                "bootable": .bool(slot.bootable),
            ])
        })
    }
}
