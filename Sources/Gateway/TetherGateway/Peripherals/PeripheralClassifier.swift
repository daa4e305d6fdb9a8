import BlueZ
import LinkProtocol
import TetherStore

/// Which sessions a peripheral gets, decided from the GATT services it offers: a pure function, so every rule is
/// here and tested without a radio.
///
/// Rules:
/// 1. Tether's service (docs/specs/link-protocol.md §2) with both RX and TX: the Tether link session.
/// 2. The Device Information Service (0x180A): its reader, beside whatever else runs — it identifies the device but
///    is no reason to keep it connected.
/// 3. A standard health service (`HealthService`) offering at least one of its measurements: the health session,
///    when the gateway serves health (it has somewhere to put the readings); otherwise the device is unsupported
///    rather than connected and its readings dropped.
/// 4. A device with no *primary* kind (rules 1 and 3; SMP next) is unsupported: the gateway records the services
///    it offered and lets it go instead of reconnecting it forever.
enum PeripheralClassifier {
    struct Classification: Hashable, Sendable {
        /// Every session to run, primary kinds first.
        var kinds: [PeripheralKind]
        /// The 128-bit UUIDs of every service the device offered (for the registry and the unsupported report).
        var offeredServices: [String]

        var isSupported: Bool { kinds.contains(where: \.isPrimary) }
    }

    static let deviceInformationService = GattUUID.normalized("180A")!

    static func classify(_ services: [GattService], servingHealth: Bool = false) -> Classification {
        var kinds: [PeripheralKind] = []
        if let tether = services.first(where: { $0.uuid == TetherGATT.service }),
            tether.characteristic(TetherGATT.rx) != nil, tether.characteristic(TetherGATT.tx)?.canSubscribe == true
        {
            kinds.append(.tetherLink)
        }
        if servingHealth, !HealthSession.subscriptions(in: services).isEmpty {
            kinds.append(.health)
        }
        if services.contains(where: { $0.uuid == deviceInformationService }) {
            kinds.append(.deviceInformation)
        }
        return Classification(kinds: kinds, offeredServices: services.map(\.uuid))
    }
}
