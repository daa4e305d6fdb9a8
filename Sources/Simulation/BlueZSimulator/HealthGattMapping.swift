import HealthDeviceModel

/// A health device's declared services as BlueZ would export them after discovery: each service at a fixed handle
/// (0x0010, 0x0020, ...), each characteristic's declaration three handles after the previous one (declaration,
/// value, CCCD: Core v5.3 Vol 3 Part G §3.3), a CCCD on every notifying or indicating characteristic.
enum HealthGattMapping {
    static func services(_ declarations: [HealthServiceDeclaration]) -> [SimulatedGattService] {
        declarations.enumerated().map { serviceIndex, service in
            let serviceHandle = UInt16(0x10 * (serviceIndex + 1))
            let characteristics = service.characteristics.enumerated().map { index, characteristic in
                let handle = serviceHandle + 1 + UInt16(3 * index)
                let flags = characteristic.properties.map(\.rawValue)
                let notifies = flags.contains("notify") || flags.contains("indicate")
                return SimulatedGattCharacteristic(
                    handle: handle, uuid: HealthUUID.full(characteristic.uuid), flags: flags,
                    role: .health(characteristic.uuid),
                    descriptors: notifies
                        ? [SimulatedGattDescriptor(
                            handle: handle + 2, uuid: TetherGattLayout.cccd, role: .healthClientConfiguration(characteristic.uuid))]
                        : [])
            }
            return SimulatedGattService(
                handle: serviceHandle, uuid: HealthUUID.full(service.uuid), primary: true, characteristics: characteristics)
        }
    }

    /// The value handle of `uuid` (declaration + 1), for the btsnoop writer's ATT records.
    static func valueHandle(of uuid: UInt16, in services: [SimulatedGattService]) -> UInt16? {
        for service in services {
            for characteristic in service.characteristics where characteristic.role == .health(uuid) {
                return characteristic.handle + 1
            }
        }
        return nil
    }
}
