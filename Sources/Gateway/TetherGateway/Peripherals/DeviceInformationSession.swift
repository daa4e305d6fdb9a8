import BlueZ
import Foundation
import TetherPrimitives
import TetherStore

/// Reads the Device Information Service (0x180A) on every connection and records what the device says about itself
/// in the peripheral registry. A failed read costs the device nothing: the link goes on, the registry keeps what an
/// earlier connection read, and the failure is the device's last error.
final class DeviceInformationSession: PeripheralSession {
    let kind = PeripheralKind.deviceInformation
    private let address: String
    private let storage: GatewayStorage
    private let clock: GatewayClock
    private let failed: @Sendable (String) async -> Void

    /// Device Information Service characteristics (Bluetooth SIG Assigned Numbers §3.8): UTF-8 strings, except the
    /// System ID (0x2A23), 8 bytes, and the PnP ID (0x2A50), 7.
    enum Field: UInt16, CaseIterable {
        case systemId = 0x2A23
        case modelNumber = 0x2A24
        case serialNumber = 0x2A25
        case firmwareRevision = 0x2A26
        case hardwareRevision = 0x2A27
        case softwareRevision = 0x2A28
        case manufacturerName = 0x2A29
        case pnpId = 0x2A50
    }

    init(
        address: String, storage: GatewayStorage, clock: GatewayClock, failed: @escaping @Sendable (String) async -> Void
    ) {
        self.address = address
        self.storage = storage
        self.clock = clock
        self.failed = failed
    }

    func linkUp(_ link: PeripheralLink) async throws {
        guard let service = link.service(PeripheralClassifier.deviceInformationService) else { return }
        var information = DeviceInformation()
        do {
            for field in Field.allCases {
                guard let characteristic = service.characteristic(String(format: "%04X", field.rawValue)),
                    characteristic.flags.contains("read")
                else { continue }
                let value = try await GattCharacteristic(session: link.session, path: characteristic.path)
                    .readValue(timeout: link.timeout)
                Self.apply(value, to: field, in: &information)
            }
            var random = SystemRandomNumberGenerator()
            try storage.peripherals.recordDeviceInformation(
                information, identityAddress: address, at: clock.linkNow(), using: &random)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            await failed("reading Device Information failed: \(error)")
        }
    }

    /// A string characteristic's value, without the NUL padding some devices send; the System ID as hex.
    static func apply(_ value: [UInt8], to field: Field, in information: inout DeviceInformation) {
        if field == .systemId {
            guard value.count == 8 else { return }
            information.systemId = Hex.encode(value)
            return
        }
        if field == .pnpId {
            information.pnpId = PnPID(characteristicValue: value) ?? information.pnpId
            return
        }
        var bytes = value[...]
        while bytes.last == 0 { bytes = bytes.dropLast() }
        guard !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self) else { return }
        switch field {
        case .manufacturerName: information.manufacturerName = text
        case .modelNumber: information.modelNumber = text
        case .serialNumber: information.serialNumber = text
        case .hardwareRevision: information.hardwareRevision = text
        case .firmwareRevision: information.firmwareRevision = text
        case .softwareRevision: information.softwareRevision = text
        case .systemId, .pnpId: break
        }
    }

    func linkDown() {}
    func drain() async {}
    func finish() {}
}
