/// A characteristic as the device declares it: its properties and whether its CCCD, reads and writes need an
/// encrypted (bonded) link.
public struct HealthCharacteristicDeclaration: Hashable, Sendable {
    public enum Property: String, Hashable, Sendable {
        case read, write, notify, indicate
    }

    public let uuid: UInt16
    public let properties: [Property]
    public let requiresEncryption: Bool
    /// A fixed value (Device Information, features); nil when the device computes it.
    public let fixedValue: [UInt8]?

    public init(_ uuid: UInt16, _ properties: [Property], encrypted: Bool = false, fixed: [UInt8]? = nil) {
        self.uuid = uuid
        self.properties = properties
        requiresEncryption = encrypted
        fixedValue = fixed
    }
}

public struct HealthServiceDeclaration: Hashable, Sendable {
    public let uuid: UInt16
    public let characteristics: [HealthCharacteristicDeclaration]
}

/// The GATT database of each kind: the profile's mandatory characteristics, Current Time where the device has a
/// clock, and Device Information.
///
/// Security, from each specification's security requirements: GLS v1.0.1 and CGMS v1.0.1 require
/// bonding/encryption for all their characteristics; BLP v1.1.1 and WSP v1.0 require the sensor to bond, and a
/// cuff or scale refuses the measurement's CCCD on an unencrypted link (ATT 0x05 Insufficient Authentication, which
/// BlueZ reports as NotPermitted "Not paired"); UDS v1.0 requires encryption for its user data. HRS, HTS and PLXS
/// set no security requirement. (Summarised from memory of the adopted texts' security considerations: check
/// against the published PDFs before relying on them.)
public enum HealthGattLayout {
    public static func services(kind: HealthDeviceKind, serial: String, e2eCRC: Bool) -> [HealthServiceDeclaration] {
        typealias C = HealthCharacteristicDeclaration
        var services: [HealthServiceDeclaration]
        switch kind {
        case .heartRate:
            // HRS v1.0: Body Sensor Location 0x2A38 (1 = chest).
            services = [HealthServiceDeclaration(uuid: HealthUUID.heartRateService, characteristics: [
                C(HealthUUID.heartRateMeasurement, [.notify]),
                C(0x2A38, [.read], fixed: [0x01]),
            ])]
        case .bloodPressure:
            // BLS v1.1.1 Blood Pressure Feature: bit 0 body movement detection, bit 1 cuff fit detection.
            services = [HealthServiceDeclaration(uuid: HealthUUID.bloodPressureService, characteristics: [
                C(HealthUUID.bloodPressureMeasurement, [.indicate], encrypted: true),
                C(HealthUUID.intermediateCuffPressure, [.notify]),
                C(HealthUUID.bloodPressureFeature, [.read], fixed: [0x03, 0x00]),
            ])]
        case .glucose:
            // GLS v1.0.1 Glucose Feature (uint16): none of the optional features (low battery, sensor malfunction,
            // sample size, strip insertion error, ..., multiple bond) is simulated: 0x0000.
            services = [HealthServiceDeclaration(uuid: HealthUUID.glucoseService, characteristics: [
                C(HealthUUID.glucoseMeasurement, [.notify], encrypted: true),
                C(HealthUUID.glucoseContext, [.notify], encrypted: true),
                C(HealthUUID.glucoseFeature, [.read], encrypted: true, fixed: [0x00, 0x00]),
                C(HealthUUID.recordAccessControlPoint, [.write, .indicate], encrypted: true),
            ])]
        case .weightScale:
            // WSS v1.0 Weight Scale Feature (uint32): bit 0 time stamp supported, bit 1 multiple users supported;
            // weight resolution (bits 3–6) 0 = not specified, the field's own 0.005 kg steps.
            services = [
                HealthServiceDeclaration(uuid: HealthUUID.weightScaleService, characteristics: [
                    C(HealthUUID.weightScaleFeature, [.read], fixed: [0x03, 0x00, 0x00, 0x00]),
                    C(HealthUUID.weightMeasurement, [.indicate], encrypted: true),
                ]),
                HealthServiceDeclaration(uuid: HealthUUID.userDataService, characteristics: [
                    C(HealthUUID.databaseChangeIncrement, [.read, .write, .notify], encrypted: true),
                    C(HealthUUID.userIndex, [.read], encrypted: true),
                    C(HealthUUID.userControlPoint, [.write, .indicate], encrypted: true),
                ]),
            ]
        case .thermometer:
            // HTS v1.0 Temperature Type 0x2A1D (2 = body).
            services = [HealthServiceDeclaration(uuid: HealthUUID.healthThermometerService, characteristics: [
                C(HealthUUID.temperatureMeasurement, [.indicate]),
                C(0x2A1D, [.read], fixed: [0x02]),
                C(HealthUUID.intermediateTemperature, [.notify]),
            ])]
        case .pulseOximeter:
            // PLXS v1.0.1 PLX Features (uint16 Supported Features): bit 2 measurement storage for spot-check
            // measurements, bit 3 timestamp for spot-check measurements.
            services = [HealthServiceDeclaration(uuid: HealthUUID.pulseOximeterService, characteristics: [
                C(HealthUUID.plxSpotCheckMeasurement, [.indicate]),
                C(HealthUUID.plxContinuousMeasurement, [.notify]),
                C(HealthUUID.plxFeatures, [.read], fixed: [0x0C, 0x00]),
                C(HealthUUID.recordAccessControlPoint, [.write, .indicate]),
            ])]
        case .cgm:
            // CGMS v1.0.1 CGM Feature: 24-bit features (bit 12 E2E-CRC supported), type (low nibble, 1 =
            // capillary whole blood... 9 = interstitial fluid) and sample location (high nibble, 5 = subcutaneous
            // tissue), then E2E-CRC, 0xFFFF when not supported.
            let featureBits: [UInt8] = [0x00, e2eCRC ? 0x10 : 0x00, 0x00, 0x59]
            let feature = e2eCRC ? CGMCRC.appending(to: featureBits) : featureBits + [0xFF, 0xFF]
            services = [HealthServiceDeclaration(uuid: HealthUUID.continuousGlucoseMonitoringService, characteristics: [
                C(HealthUUID.cgmMeasurement, [.notify], encrypted: true),
                C(HealthUUID.cgmFeature, [.read], encrypted: true, fixed: feature),
                C(HealthUUID.cgmSessionStartTime, [.read, .write], encrypted: true),
                C(HealthUUID.recordAccessControlPoint, [.write, .indicate], encrypted: true),
            ])]
        }
        if kind.hasClock {
            services.append(HealthServiceDeclaration(uuid: HealthUUID.currentTimeService, characteristics: [
                C(HealthUUID.currentTime, [.read, .write, .notify])
            ]))
        }
        services.append(HealthServiceDeclaration(uuid: HealthUUID.deviceInformationService, characteristics: [
            C(HealthUUID.manufacturerName, [.read], fixed: Array("Tether Sim Health".utf8)),
            C(HealthUUID.modelNumber, [.read], fixed: Array(kind.rawValue.utf8)),
            C(HealthUUID.serialNumber, [.read], fixed: Array(serial.utf8)),
            C(HealthUUID.firmwareRevision, [.read], fixed: Array("1.0.0".utf8)),
            // DIS v1.1 §3.9: Bluetooth SIG company ID 0xFFFF (reserved for tests, Assigned Numbers §7), product 2, v1.0.0.
            C(HealthUUID.pnpId, [.read], fixed: [0x01, 0xFF, 0xFF, 0x02, 0x00, 0x00, 0x01]),
        ]))
        return services
    }
}

extension HealthDeviceKind {
    /// Devices that time-stamp their readings keep a clock and offer Current Time (a heart-rate strap only streams).
    public var hasClock: Bool { self != .heartRate }

    /// The primary service a device advertises.
    public var primaryService: UInt16 {
        switch self {
        case .heartRate: HealthUUID.heartRateService
        case .bloodPressure: HealthUUID.bloodPressureService
        case .glucose: HealthUUID.glucoseService
        case .weightScale: HealthUUID.weightScaleService
        case .thermometer: HealthUUID.healthThermometerService
        case .pulseOximeter: HealthUUID.pulseOximeterService
        case .cgm: HealthUUID.continuousGlucoseMonitoringService
        }
    }
}
