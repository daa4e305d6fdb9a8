import BlueZ
import SMP

/// Where MCUmgr's SMP characteristic is among a device's resolved GATT services (SMPBluetoothUUID; Zephyr smp_bt.c
/// `SMP_BT_ATTRS`: one characteristic carrying requests and responses).
public enum SMPBluetoothService {
    /// The SMP characteristic, if the device offers the service.
    public static func characteristic(in services: [GattService]) -> GattService.Characteristic? {
        services.first { $0.uuid == SMPBluetoothUUID.service }?.characteristic(SMPBluetoothUUID.characteristic)
    }
}
