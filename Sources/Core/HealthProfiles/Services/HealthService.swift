/// The Bluetooth SIG health services a gateway reads, with the characteristics each one delivers and how: what a
/// session subscribes to (every measurement, before anything can arrive), which are live-only intermediates, and
/// which services keep records that the Record Access Control Point reads back (the cold lane).
///
/// UUIDs from Bluetooth SIG Assigned Numbers §3.4 (services) and §3.8 (characteristics); deliveries from each
/// service specification's characteristic table, cited per case.
public enum HealthService: UInt16, CaseIterable, Hashable, Sendable {
    /// HRS v1.0 §3.1: Heart Rate Measurement, notify (mandatory).
    case heartRate = 0x180D
    /// BLS v1.1.1 §3.1–3.2: Blood Pressure Measurement, indicate (mandatory); Intermediate Cuff Pressure, notify
    /// (optional, live only). Stored readings arrive as indications after the subscription, without RACP.
    case bloodPressure = 0x1810
    /// HTS v1.0 §3.1–3.3: Temperature Measurement, indicate (mandatory); Intermediate Temperature, notify
    /// (optional, live only).
    case healthThermometer = 0x1809
    /// WSS v1.0 §3.2: Weight Measurement, indicate (mandatory). Stored readings arrive as indications on connect.
    case weightScale = 0x181D
    /// BCS v1.0 §3.2: Body Composition Measurement, indicate (mandatory), possibly split across indications.
    case bodyComposition = 0x181B
    /// GLS v1.0.1 §3.2–3.4: Glucose Measurement and Glucose Measurement Context, notify; RACP, write + indicate
    /// (mandatory): the meter's memory is read with RACP only.
    case glucose = 0x1808
    /// PLXS v1.0 §3.2–3.3: PLX Spot-check Measurement, indicate; PLX Continuous Measurement, notify; RACP when the
    /// oximeter stores spot-checks (§3.5, mandatory if storage is supported).
    case pulseOximeter = 0x1822
    /// CGMS v1.0.1 §3.1, §3.6: CGM Measurement, notify; RACP (mandatory), filtered by time offset, not sequence.
    case continuousGlucoseMonitoring = 0x181F

    /// How a characteristic reaches the gateway.
    public enum Delivery: Hashable, Sendable {
        case notify
        case indicate
    }

    /// A characteristic a session subscribes to.
    public struct Subscribed: Hashable, Sendable {
        /// The 16-bit assigned number.
        public let uuid: UInt16
        public let delivery: Delivery
        /// Whether the service requires it (a device without an optional one simply does not offer it).
        public let mandatory: Bool
        /// A live-only value (Intermediate Cuff Pressure, Intermediate Temperature): shown, never stored.
        public let intermediate: Bool
    }

    /// Record Access Control Point (0x2A52): write with indications of its responses.
    public static let recordAccessControlPoint: UInt16 = 0x2A52

    /// The characteristics to subscribe to, measurement first; RACP is not listed here (see `storesRecords`).
    public var subscribed: [Subscribed] {
        switch self {
        case .heartRate:
            [.init(uuid: 0x2A37, delivery: .notify, mandatory: true, intermediate: false)]
        case .bloodPressure:
            [
                .init(uuid: 0x2A35, delivery: .indicate, mandatory: true, intermediate: false),
                .init(uuid: 0x2A36, delivery: .notify, mandatory: false, intermediate: true),
            ]
        case .healthThermometer:
            [
                .init(uuid: 0x2A1C, delivery: .indicate, mandatory: true, intermediate: false),
                .init(uuid: 0x2A1E, delivery: .notify, mandatory: false, intermediate: true),
            ]
        case .weightScale:
            [.init(uuid: 0x2A9D, delivery: .indicate, mandatory: true, intermediate: false)]
        case .bodyComposition:
            [.init(uuid: 0x2A9C, delivery: .indicate, mandatory: true, intermediate: false)]
        case .glucose:
            [
                .init(uuid: 0x2A18, delivery: .notify, mandatory: true, intermediate: false),
                .init(uuid: 0x2A34, delivery: .notify, mandatory: false, intermediate: false),
            ]
        case .pulseOximeter:
            [
                .init(uuid: 0x2A5E, delivery: .indicate, mandatory: false, intermediate: false),
                .init(uuid: 0x2A5F, delivery: .notify, mandatory: false, intermediate: false),
            ]
        case .continuousGlucoseMonitoring:
            [.init(uuid: 0x2AA7, delivery: .notify, mandatory: true, intermediate: false)]
        }
    }

    /// Whether the device keeps records the gateway reads back with RACP (the cold lane). Cuffs and scales keep
    /// records too, but send them on their own after the subscription (BLS §4.4, WSS §4.4), so they need no RACP.
    public var storesRecords: Bool {
        switch self {
        case .glucose, .pulseOximeter, .continuousGlucoseMonitoring: true
        case .heartRate, .bloodPressure, .healthThermometer, .weightScale, .bodyComposition: false
        }
    }

    /// The service with this 16-bit assigned number, if it is one of these.
    public init?(assignedNumber: UInt16) {
        self.init(rawValue: assignedNumber)
    }
}
