import CBOR
import SMP

/// How the simulated device reports an error, in the form the request's header version asks for (Zephyr "SMP
/// Protocol Specification", "Minimal response"): SMP v2 requests get group errors as `err: {group, rc}`; SMP v1
/// (legacy) requests get `rc`, the group error translated to an SMP-level code as Zephyr does when
/// CONFIG_MCUMGR_SMP_SUPPORT_ORIGINAL_PROTOCOL is set (img_mgmt.c, `img_mgmt_translate_error_code`). SMP-level
/// errors (an unknown command, a malformed request) are `rc` in both versions.
enum DeviceErrorForm {
    static func smp(_ error: MCUmgrError) -> [CBORPair] { [CBORPair(.text("rc"), .unsigned(UInt64(error.rawValue)))] }

    static func image(_ error: ImageManagementError, version: SMPVersion) -> [CBORPair] {
        switch version {
        case .v2:
            return [
                CBORPair(
                    .text("err"), .textMap(["group": .unsigned(UInt64(SMPGroup.image)), "rc": .unsigned(UInt64(error.rawValue))]))
            ]
        case .v1:
            return smp(legacy(error))
        }
    }

    /// img_mgmt.c, `img_mgmt_translate_error_code`: the image group's codes as the MGMT_ERR_* a v1 client knows.
    static func legacy(_ error: ImageManagementError) -> MCUmgrError {
        switch error {
        case .OK: return .EOK
        case .NO_IMAGE, .NO_TLVS: return .ENOENT
        case .NO_FREE_SLOT, .CURRENT_VERSION_IS_NEWER, .IMAGE_ALREADY_PENDING, .IMAGE_CONFIRMATION_DENIED,
            .IMAGE_SETTING_TEST_TO_ACTIVE_DENIED:
            return .EBADSTATE
        case .NO_FREE_MEMORY: return .ENOMEM
        case .INVALID_SLOT, .INVALID_PAGE_OFFSET, .INVALID_OFFSET, .INVALID_LENGTH, .INVALID_IMAGE_HEADER,
            .INVALID_IMAGE_HEADER_MAGIC, .INVALID_HASH, .INVALID_FLASH_ADDRESS, .HASH_NOT_FOUND, .INVALID_IMAGE_TOO_LARGE,
            .INVALID_IMAGE_DATA_OVERRUN:
            return .EINVAL
        default: return .EUNKNOWN
        }
    }
}
