/// An error the device reports on purpose, in either form (Zephyr "SMP Protocol Specification", "Minimal
/// response"): SMP v1 and SMP-level errors as `rc` (with an optional `rsn` text), SMP v2 group errors as
/// `err: {group, rc}`. The name is MCUmgr's own (`MGMT_ERR_ENOTSUP`, `IMG_MGMT_ERR_NO_FREE_SLOT`…).
public struct SMPDeviceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `nil` for an SMP-level code (`MGMT_ERR_*`); the group for a v2 group error.
    public var group: UInt16?
    public var rc: Int64
    /// `rsn`, the device's reason text, when it sent one.
    public var reason: String?

    public init(group: UInt16? = nil, rc: Int64, reason: String? = nil) {
        self.group = group
        self.rc = rc
        self.reason = reason
    }

    /// MCUmgr's name for the code, or "<group>_ERR_<rc>" for one this client does not know.
    public var name: String {
        switch group {
        case nil: return MCUmgrError(rawValue: rc).map { "MGMT_ERR_\($0)" } ?? "MGMT_ERR_\(rc)"
        case SMPGroup.os?: return OSManagementError(rawValue: rc).map { "OS_MGMT_ERR_\($0)" } ?? "OS_MGMT_ERR_\(rc)"
        case SMPGroup.image?: return ImageManagementError(rawValue: rc).map { "IMG_MGMT_ERR_\($0)" } ?? "IMG_MGMT_ERR_\(rc)"
        case let group?: return "GROUP_\(group)_ERR_\(rc)"
        }
    }

    public var mcumgrError: MCUmgrError? { group == nil ? MCUmgrError(rawValue: rc) : nil }
    public var imageError: ImageManagementError? { group == SMPGroup.image ? ImageManagementError(rawValue: rc) : nil }
    public var osError: OSManagementError? { group == SMPGroup.os ? OSManagementError(rawValue: rc) : nil }

    public var description: String { name + (reason.map { " (\($0))" } ?? "") }
}

/// SMP-level error codes, `MGMT_ERR_*` (Zephyr include/zephyr/mgmt/mcumgr/mgmt/mgmt_defines.h; the same table as
/// the smp package's `smp.error.MGMT_ERR`).
public enum MCUmgrError: Int64, Hashable, Sendable, CaseIterable {
    case EOK = 0, EUNKNOWN, ENOMEM, EINVAL, ETIMEOUT, ENOENT, EBADSTATE, EMSGSIZE, ENOTSUP, ECORRUPT, EBUSY
    case EACCESSDENIED, UNSUPPORTED_TOO_OLD, UNSUPPORTED_TOO_NEW
    case EPERUSER = 256
}

/// OS group errors, `OS_MGMT_ERR_*` (Zephyr include/zephyr/mgmt/mcumgr/grp/os_mgmt/os_mgmt.h).
public enum OSManagementError: Int64, Hashable, Sendable, CaseIterable {
    case OK = 0, UNKNOWN, INVALID_FORMAT, QUERY_YIELDS_NO_ANSWER, RTC_NOT_SET, RTC_COMMAND_FAILED
    case QUERY_RESPONSE_VALUE_NOT_VALID
}

/// Image group errors, `IMG_MGMT_ERR_*` (Zephyr include/zephyr/mgmt/mcumgr/grp/img_mgmt/img_mgmt.h; the smp
/// package's `IMG_MGMT_ERR` has 0…33).
public enum ImageManagementError: Int64, Hashable, Sendable, CaseIterable {
    case OK = 0, UNKNOWN, FLASH_CONFIG_QUERY_FAIL, NO_IMAGE, NO_TLVS, INVALID_TLV, TLV_MULTIPLE_HASHES_FOUND
    case TLV_INVALID_SIZE, HASH_NOT_FOUND, NO_FREE_SLOT, FLASH_OPEN_FAILED, FLASH_READ_FAILED, FLASH_WRITE_FAILED
    case FLASH_ERASE_FAILED, INVALID_SLOT, NO_FREE_MEMORY, FLASH_CONTEXT_ALREADY_SET, FLASH_CONTEXT_NOT_SET
    case FLASH_AREA_DEVICE_NULL, INVALID_PAGE_OFFSET, INVALID_OFFSET, INVALID_LENGTH, INVALID_IMAGE_HEADER
    case INVALID_IMAGE_HEADER_MAGIC, INVALID_HASH, INVALID_FLASH_ADDRESS, VERSION_GET_FAILED
    case CURRENT_VERSION_IS_NEWER, IMAGE_ALREADY_PENDING, INVALID_IMAGE_VECTOR_TABLE, INVALID_IMAGE_TOO_LARGE
    case INVALID_IMAGE_DATA_OVERRUN, IMAGE_CONFIRMATION_DENIED, IMAGE_SETTING_TEST_TO_ACTIVE_DENIED
    case ACTIVE_SLOT_NOT_KNOWN
}
