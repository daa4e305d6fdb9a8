import HealthProfiles
import TetherPrimitives

/// A standard health device as the gateway sees it live, for the control API's `ListHealthDevices` (the store
/// adds what it holds: samples and cursors).
public struct HealthDeviceLive: Hashable, Sendable {
    public var address: String
    public var name: String?
    /// Its link is up and every measurement is subscribed.
    public var connected: Bool
    /// The health services it offered on its latest link since the gateway started (`blood-pressure`, `glucose`,
    /// …, as `HealthService.controlName`); nil when it has had no link since.
    public var services: [String]?
    /// Those of `services` whose stored records the cold lane reads over a Record Access Control Point.
    public var recordAccessServices: [String]?
    /// When the gateway wrote the device's clock on its current link (the time-write policy); nil when it did not.
    public var clockWrittenAt: Timestamp?
}

extension Gateway {
    /// Every device with a health session (a device classified as health since the gateway started).
    public func healthDevices() -> [HealthDeviceLive] {
        otherSessions.compactMap { address, sessions in
            guard let session = sessions[.health] as? HealthSession else { return nil }
            let device = snapshot(address)
            let offer = session.offer
            return HealthDeviceLive(
                address: address, name: device.name, connected: device.state == .connected,
                services: offer?.services.map(\.controlName), recordAccessServices: offer?.recordServices.map(\.controlName),
                clockWrittenAt: session.clockWrittenAt)
        }.sorted { $0.address < $1.address }
    }

    /// A technician's backfill (control API `Backfill`): the cold lane runs now on every service of the device
    /// that keeps records behind a RACP, from the committed cursor (RecordTransfer rule 6); returns once each
    /// procedure ended. A device that is not connected, or reads no records over RACP, is `notPermitted`.
    public func backfill(_ serialOrAddress: String) async throws(GatewayError) -> [HealthBackfillResult] {
        guard let address = resolve(serialOrAddress) ?? otherSessions.keys.first(where: { $0 == serialOrAddress.uppercased() }) else {
            throw .unknownDevice(serialOrAddress)
        }
        guard let session = otherSessions[address]?[.health] as? HealthSession else {
            throw .notPermitted("\(address) is not a health device the gateway serves; `tether health devices` lists them")
        }
        guard snapshot(address).state == .connected else {
            throw .notPermitted("\(address) is not connected; a backfill runs on a connected device (it also runs by itself on every connection)")
        }
        guard let offer = session.offer, !offer.recordServices.isEmpty else {
            throw .notPermitted("\(address) keeps no records behind a Record Access Control Point (it sends stored readings by itself on connect)")
        }
        guard let results = await session.backfill() else {
            throw .notPermitted("\(address) has no cold-lane transfer on its current link (the link is still being set up, or just ended)")
        }
        return results
    }
}
