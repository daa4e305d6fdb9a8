import BlueZ
import DBus
import LinkProtocol
import Testing
@testable import TetherGateway
import TetherStore

@Suite("PeripheralClassifier: which sessions a device gets, from its services")
struct PeripheralClassifierTests {
    static let device: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01"

    static func service(_ uuid: String, _ handle: Int, _ characteristics: [(String, Set<String>)]) -> GattService {
        let path = DBusObjectPath(stringLiteral: device.rawValue + String(format: "/service%04x", handle))
        return GattService(
            path: path, uuid: GattUUID.normalized(uuid)!, isPrimary: true, device: device,
            characteristics: characteristics.enumerated().map { index, characteristic in
                GattService.Characteristic(
                    path: DBusObjectPath(stringLiteral: path.rawValue + String(format: "/char%04x", handle + 1 + index)),
                    uuid: GattUUID.normalized(characteristic.0)!, flags: characteristic.1)
            })
    }

    static let tether = service(TetherGATT.service, 0x10, [(TetherGATT.rx, ["write-without-response"]), (TetherGATT.tx, ["notify"])])
    static let information = service("180A", 0x20, [("2A29", ["read"]), ("2A24", ["read"])])
    static let linkLoss = service("1803", 0x30, [("2A06", ["read", "write"])])

    @Test func aTetherDeviceGetsItsLinkSessionAndTheInformationReader() {
        let classification = PeripheralClassifier.classify([Self.tether, Self.information, Self.linkLoss])
        #expect(classification.kinds == [.tetherLink, .deviceInformation])
        #expect(classification.isSupported)
        #expect(classification.offeredServices == [TetherGATT.service, GattUUID.normalized("180A")!, GattUUID.normalized("1803")!])
    }

    @Test func aDeviceWithoutAPrimaryKindIsUnsupported() {
        let classification = PeripheralClassifier.classify([Self.information, Self.linkLoss])
        #expect(classification.kinds == [.deviceInformation])
        #expect(!classification.isSupported)
        #expect(PeripheralClassifier.classify([]).kinds.isEmpty)
        #expect(!PeripheralClassifier.classify([]).isSupported)
    }

    @Test func tethersServiceWithoutBothCharacteristicsIsNotALink() {
        let txOnly = Self.service(TetherGATT.service, 0x10, [(TetherGATT.tx, ["notify"])])
        let txNotSubscribable = Self.service(
            TetherGATT.service, 0x10, [(TetherGATT.rx, ["write-without-response"]), (TetherGATT.tx, ["read"])])
        // Indications count as subscribable (BlueZ confirms them itself).
        let txIndicates = Self.service(
            TetherGATT.service, 0x10, [(TetherGATT.rx, ["write-without-response"]), (TetherGATT.tx, ["indicate"])])
        #expect(PeripheralClassifier.classify([txOnly]).kinds.isEmpty)
        #expect(PeripheralClassifier.classify([txNotSubscribable]).kinds.isEmpty)
        #expect(PeripheralClassifier.classify([txIndicates]).kinds == [.tetherLink])
    }

    @Test func deviceInformationValuesAreReadAsTheServiceDefinesThem() {
        var information = DeviceInformation()
        DeviceInformationSession.apply(Array("ACME Medical\0\0".utf8), to: .manufacturerName, in: &information)
        DeviceInformationSession.apply(Array("BP-7".utf8), to: .modelNumber, in: &information)
        DeviceInformationSession.apply([0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77], to: .systemId, in: &information)
        DeviceInformationSession.apply([0xFF, 0xFE], to: .serialNumber, in: &information)  // not UTF-8: ignored
        DeviceInformationSession.apply([0x01, 0x02], to: .systemId, in: &information)  // not 8 bytes: ignored
        DeviceInformationSession.apply([0, 0], to: .firmwareRevision, in: &information)  // only padding: ignored
        #expect(information == DeviceInformation(
            manufacturerName: "ACME Medical", modelNumber: "BP-7", systemId: "0011223344556677"))
    }
}
