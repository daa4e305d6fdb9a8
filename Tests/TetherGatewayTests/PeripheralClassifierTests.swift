import BlueZ
import DBus
import HealthProfiles
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

    static let cuff = service("1810", 0x40, [("2A35", ["indicate"]), ("2A36", ["notify"]), ("2A49", ["read"])])
    static let glucoseWithoutMeasurement = service("1808", 0x50, [("2A52", ["write", "indicate"]), ("2A51", ["read"])])

    /// Rule 3: a health device is served only when the gateway has somewhere to put its readings, and only when it
    /// offers a measurement to subscribe to.
    @Test func aHealthDeviceIsServedOnlyWithASinkAndAMeasurement() {
        #expect(PeripheralClassifier.classify([Self.cuff, Self.information], servingHealth: true).kinds == [.health, .deviceInformation])
        #expect(PeripheralClassifier.classify([Self.cuff, Self.information], servingHealth: true).isSupported)
        #expect(PeripheralClassifier.classify([Self.cuff, Self.information], servingHealth: false).kinds == [.deviceInformation])
        #expect(!PeripheralClassifier.classify([Self.cuff], servingHealth: false).isSupported)
        #expect(PeripheralClassifier.classify([Self.glucoseWithoutMeasurement], servingHealth: true).kinds.isEmpty)
        #expect(PeripheralClassifier.classify([Self.tether, Self.cuff], servingHealth: true).kinds == [.tetherLink, .health])
    }

    /// Every offered measurement is subscribed, indicate-only ones marked so (StartNotify), optional ones only when
    /// present, and nothing that is not a measurement (the cuff's feature characteristic 0x2A49, RACP).
    @Test func aHealthSessionSubscribesEveryOfferedMeasurement() {
        let wanted = HealthSession.subscriptions(in: [Self.tether, Self.cuff, Self.glucoseWithoutMeasurement, Self.information])
        #expect(wanted.map(\.1.uuid) == [0x2A35, 0x2A36])
        #expect(wanted.map(\.2.indicatesOnly) == [true, false])
        #expect(wanted.map(\.0) == [.bloodPressure, .bloodPressure])
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

    /// PnP ID (DIS v1.1 §3.9): vendor ID source, vendor ID, product ID, product version, each 16-bit little-endian.
    /// 0x0059 is Nordic Semiconductor's Bluetooth SIG company identifier (Assigned Numbers §7).
    @Test func aPnPIDIsReadFieldByField() throws {
        var information = DeviceInformation()
        DeviceInformationSession.apply([0x01, 0x59, 0x00, 0x34, 0x12, 0x23, 0x01], to: .pnpId, in: &information)
        let pnp = try #require(information.pnpId)
        #expect(pnp == PnPID(vendorIdSource: .bluetoothSIG, vendorId: 0x0059, productId: 0x1234, productVersion: 0x0123))
        #expect(pnp.description == "bluetooth-sig:0x0059/0x1234 v1.2.3")
        // Ignored, keeping what was read: a reserved vendor ID source (0, 3), a wrong length.
        DeviceInformationSession.apply([0x00, 0x59, 0x00, 0x34, 0x12, 0x23, 0x01], to: .pnpId, in: &information)
        DeviceInformationSession.apply([0x03, 0x59, 0x00, 0x34, 0x12, 0x23, 0x01], to: .pnpId, in: &information)
        DeviceInformationSession.apply([0x02, 0x6B, 0x1D, 0x01, 0x00, 0x00], to: .pnpId, in: &information)
        #expect(information.pnpId == pnp)
        DeviceInformationSession.apply([0x02, 0x6B, 0x1D, 0x01, 0x00, 0x10, 0x02], to: .pnpId, in: &information)
        #expect(information.pnpId?.description == "usb-if:0x1d6b/0x0001 v2.1.0")
    }
}
