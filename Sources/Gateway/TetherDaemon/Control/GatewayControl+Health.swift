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

    /// `device` is an address or a peripheral uid ("" for every health device); `query` the filters of
    /// control-api.md, "Health sample": newest first.
    func listHealthSamples(device: String, query fields: [String: DBusValue]) throws(DBusError) -> DBusValue {
        let only = device.isEmpty ? nil : try healthPeripheral(device)
        var query = try HealthSampleFilter.query(fields)
        query.peripheralUid = only?.uid
        let samples = try storeCall { () throws(StoreError) in try healthStore.samples(query) }
        let addresses = try peripheralAddresses()
        return ControlRecords.list(samples.map { ControlRecords.healthSample($0, address: addresses[$0.peripheralUid]) })
    }

    // MARK: The change lane by hand (issue 15, item 2; docs/design/health.md, "The change lane")

    /// Tombstones one sample: its row stays, marked deleted, so that the device's copy of the reading never comes
    /// back; the tombstone commits with it and reaches the backend on the next sync.
    func deleteHealthSample(uid: String, note: String) async throws -> DBusValue {
        let uid = uid.lowercased()
        let note = try Self.note(note)
        let outcome = try await commit(.deletedByTechnician(sampleUid: uid, note: note), sampleUid: uid)
        // The note is a technician's free text about a person's reading: it stays out of the journal.
        logger.notice("health sample deleted by a technician", metadata: ["sample": "\(uid)", "tombstone": "\(outcome.deletionUid)"])
        sync?.localWrite()
        return try changeRecord(uid: uid, outcome: outcome)
    }

    /// Replaces one sample with a corrected version (`HealthCorrection`: its value in the reported unit, or its user
    /// index) and tombstones the original, in one transaction.
    func correctHealthSample(uid: String, correction fields: [String: DBusValue], note: String) async throws -> DBusValue {
        let uid = uid.lowercased()
        let note = try Self.note(note)
        let correction = try HealthSampleFilter.correction(fields)
        guard let original = try storeCall({ () throws(StoreError) in try healthStore.sample(uid: uid) }) else {
            throw ControlError.unknownSample(uid)
        }
        guard original.deletedAt == nil else {
            throw ControlError.notPermitted("Health sample \(uid) was already deleted or corrected; `tether health deletions` shows what replaced it")
        }
        let replacement: HealthSample
        do {
            replacement = try correction.replacement(of: original.sample)
        } catch {
            throw ControlError.invalidArgument("Cannot correct health sample \(uid): \(error)")
        }
        let outcome = try await commit(.corrected(sampleUid: uid, replacement: replacement, by: .technician, note: note), sampleUid: uid)
        logger.notice("health sample corrected by a technician", metadata: [
            "sample": "\(uid)", "replacement": "\(outcome.replacementUid ?? "")", "fields": "\(fields.keys.sorted().joined(separator: ","))",
        ])
        sync?.localWrite()
        return try changeRecord(uid: uid, outcome: outcome)
    }

    /// The tombstones, oldest first: `device` "" for every device.
    func listHealthDeletions(device: String, limit: UInt32) throws(DBusError) -> DBusValue {
        let only = device.isEmpty ? nil : try healthPeripheral(device)
        let deletions = try storeCall { () throws(StoreError) in
            try healthStore.deletions(peripheralUid: only?.uid, limit: Self.limit(limit))
        }
        let addresses = try peripheralAddresses()
        return ControlRecords.list(deletions.map { ControlRecords.healthDeletion($0, address: $0.peripheralUid.flatMap { addresses[$0] }) })
    }

    private func commit(_ change: HealthChange, sampleUid: String) async throws -> HealthChangeOutcome {
        switch await healthStore.commit(change, via: store.committer) {
        case .success(let outcome): return outcome
        case .failure(.unknownSample): throw ControlError.unknownSample(sampleUid)
        case .failure(.sampleAlreadyDeleted):
            throw ControlError.notPermitted("Health sample \(sampleUid) was already deleted or corrected; `tether health deletions` shows what replaced it")
        case .failure(.store(let error)): throw ControlError.from(error)
        case .failure(let refusal): throw ControlError.notPermitted("The store refused the change: \(refusal)")
        }
    }

    /// The committed change as control-api.md's "Health change" record, read back from the store.
    private func changeRecord(uid: String, outcome: HealthChangeOutcome) throws(DBusError) -> DBusValue {
        let deletion = try storeCall { () throws(StoreError) in try healthStore.deletion(uid: outcome.deletionUid) }
        guard let deletion else { throw ControlError.storageFailed("The tombstone \(outcome.deletionUid) was committed but cannot be read back") }
        let addresses = try peripheralAddresses()
        return ControlRecords.healthDeletion(deletion, address: deletion.peripheralUid.flatMap { addresses[$0] })
    }

    /// A technician's note: free text, at most 1000 characters (the upload contract's limit), none when empty.
    private static func note(_ text: String) throws(DBusError) -> String? {
        guard !text.isEmpty else { return nil }
        guard text.unicodeScalars.count <= 1000 else { throw ControlError.invalidArgument("note is longer than 1000 characters (\(text.unicodeScalars.count))") }
        return text
    }

    private func peripheralAddresses() throws(DBusError) -> [String: String] {
        let peripherals = try storeCall { () throws(StoreError) in try peripheralRegistry.peripherals() }
        var addresses: [String: String] = [:]
        for peripheral in peripherals { addresses[peripheral.uid] = peripheral.identityAddress }
        return addresses
    }

    /// The server's daily rollups the gateway pulled (issue 15; docs/design/health.md, "Projections"), with their
    /// freshness; `device` is an address or a peripheral uid, "" for every device.
    func listHealthProjections(device: String) throws(DBusError) -> DBusValue {
        let only = device.isEmpty ? nil : try healthPeripheral(device)
        let projections = HealthProjections(database: store.database)
        let entries = try storeCall { () throws(StoreError) in try projections.entries(deviceUid: only?.uid) }
        let addresses = try peripheralAddresses()
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
