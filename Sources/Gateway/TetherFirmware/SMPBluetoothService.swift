import BlueZ

/// MCUmgr's SMP GATT service as Zephyr declares it (include/zephyr/mgmt/mcumgr/transport/smp_bt.h, smp_bt.c
/// `SMP_BT_ATTRS`): one characteristic carrying requests (Write Without Response) and responses (notifications).
public enum SMPBluetoothService {
    /// SMP_BT_SVC_UUID_VAL.
    public static let service = "8d53dc1d-1db7-4cd3-868b-8a527460aa84"
    /// SMP_BT_CHR_UUID_VAL.
    public static let characteristic = "da2e7828-fbce-4e01-ae9e-261174997c48"

    /// The SMP characteristic among a device's resolved services, if it offers the service.
    public static func characteristic(in services: [GattService]) -> GattService.Characteristic? {
        services.first { $0.uuid == service }?.characteristic(characteristic)
    }
}
