import DBus
import TetherGateway
import TetherPrimitives
import TetherStore

/// The health methods of io.tether.Gateway1 (docs/specs/control-api.md, "Health"): what the health lanes stored,
/// read from the store's health tables, beside what the gateway sees live.
extension GatewayControl {
    var healthStore: HealthStore { HealthStore(database: store.database) }
    var peripheralRegistry: PeripheralRegistry { PeripheralRegistry(database: store.database) }

    /// Every health peripheral the registry knows (classified `health` on a link), completed by the gateway's live
    /// view; and one the gateway serves that the registry has not recorded yet.
    func listHealthDevices() async throws -> DBusValue {
        let peripherals = try storeCall { () throws(StoreError) in try peripheralRegistry.peripherals() }
            .filter { $0.kinds.contains(.health) && $0.identityAddress != nil }
        let live = await gateway?.healthDevices() ?? []
        let summaries = try storeCall { () throws(StoreError) in try healthStore.sampleSummaries() }
        let cursors = try storeCall { () throws(StoreError) in try healthStore.cursors() }
        var addresses = Set(peripherals.compactMap(\.identityAddress))
        addresses.formUnion(live.map(\.address))
        return ControlRecords.list(addresses.sorted().map { address in
            let peripheral = peripherals.first { $0.identityAddress == address }
            return ControlRecords.healthDevice(
                address: address, peripheral: peripheral, live: live.first { $0.address == address },
                summary: peripheral.flatMap { summaries[$0.uid] },
                cursors: peripheral.map { uid in cursors.filter { $0.peripheralUid == uid.uid } } ?? [])
        })
    }

    /// `device` is an address or a peripheral uid; `since` UTC nanoseconds (0: from the beginning); newest first.
    func listHealthSamples(device: String, since: Int64, limit: UInt32) throws(DBusError) -> DBusValue {
        let peripheral = try healthPeripheral(device)
        guard since >= 0 else { throw ControlError.invalidArgument("since must be UTC nanoseconds since 1970 (0: every sample), not \(since)") }
        let query = HealthSampleQuery(
            peripheralUid: peripheral.uid, from: since == 0 ? nil : Timestamp(nanoseconds: since), limit: Self.limit(limit))
        let samples = try storeCall { () throws(StoreError) in try healthStore.samples(query) }
        return ControlRecords.list(samples.map { ControlRecords.healthSample($0, address: peripheral.identityAddress) })
    }

    /// The server's daily rollups the gateway pulled (issue 15; docs/design/health.md, "Projections"), with their
    /// freshness; `device` is an address or a peripheral uid, "" for every device.
    func listHealthProjections(device: String) throws(DBusError) -> DBusValue {
        let only = device.isEmpty ? nil : try healthPeripheral(device)
        let projections = HealthProjections(database: store.database)
        let entries = try storeCall { () throws(StoreError) in try projections.entries(deviceUid: only?.uid) }
        let peripherals = try storeCall { () throws(StoreError) in try peripheralRegistry.peripherals() }
        var addresses: [String: String] = [:]
        for peripheral in peripherals { addresses[peripheral.uid] = peripheral.identityAddress }
        return ControlRecords.list(entries.map { ControlRecords.healthProjection($0, address: addresses[$0.key.deviceUid]) })
    }

    /// Runs the cold lane now on a connected device that keeps records behind a RACP, and answers when it ended.
    func backfill(_ device: String) async throws -> DBusValue {
        let peripheral = try healthPeripheral(device)
        guard let gateway else {
            throw ControlError.unavailable("tetherd runs without its Bluetooth session; check `journalctl -u tetherd` and that bluetoothd is running")
        }
        guard let address = peripheral.identityAddress else { throw ControlError.unknownDevice(device) }
        let results: [HealthBackfillResult]
        do {
            results = try await gateway.backfill(address)
        } catch {
            throw Self.map(error)
        }
        logger.notice("health backfill", metadata: [
            "address": "\(address)",
            "results": "\(results.map { "\($0.service): \($0.outcome), \($0.recordsStored) records" }.joined(separator: "; "))",
        ])
        return ControlRecords.list(results.map(ControlRecords.backfillResult))
    }

    /// The registry's health peripheral with this address (any case) or uid.
    private func healthPeripheral(_ identifier: String) throws(DBusError) -> PeripheralRecord {
        let registry = peripheralRegistry
        let found = try storeCall { () throws(StoreError) -> PeripheralRecord? in
            if let byAddress = try registry.peripheral(identityAddress: identifier.uppercased()) { return byAddress }
            return try registry.peripheral(uid: identifier.lowercased())
        }
        guard let found else { throw ControlError.unknownDevice(identifier) }
        guard found.kinds.contains(.health) else {
            throw ControlError.notPermitted("\(identifier) is not a health device; `tether health devices` lists them")
        }
        return found
    }
}
