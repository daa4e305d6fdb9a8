/// MCUmgr's SMP GATT service and its one characteristic, as Zephyr declares them
/// (include/zephyr/mgmt/mcumgr/transport/smp_bt.h: SMP_BT_SVC_UUID_VAL, SMP_BT_CHR_UUID_VAL), lowercase as BlueZ
/// spells UUIDs. The gateway's SMP BLE transport looks them up; the simulated device offers them.
public enum SMPBluetoothUUID {
    public static let service = "8d53dc1d-1db7-4cd3-868b-8a527460aa84"
    /// Requests (Write Without Response) and responses (notifications) alike.
    public static let characteristic = "da2e7828-fbce-4e01-ae9e-261174997c48"
}
