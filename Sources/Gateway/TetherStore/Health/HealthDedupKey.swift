/// The rule that makes one reading one row, however often it arrives: live and then again from the device's
/// memory, again after a reconnect, again after a gateway crash before the cursor moved. `healthSample.dedupKey` is
/// UNIQUE and samples are inserted with `ON CONFLICT DO NOTHING`, so the table, not a lane's memory, decides.
///
/// A key names the sample's device, characteristic, user, metric and occurrence in the record, and then the reading
/// by the best identity the device gives it. The device is named by its Bluetooth identity address (Core v5.4 Vol 3
/// Part C §15.1: public or static random, the address an RPA resolves to), which outlives the gateway's database,
/// not by its registry uid, which does not: a gateway that lost its database registers the device again under a new
/// uid and reads its stored records again from the start (the cursor went too); with the uid in the key every one of
/// them would reach the backend as a new reading, while the same key lets the backend answer `duplicate`
/// (docs/specs/sync-api.yaml, rule 3). A peripheral without an identity address is named by its uid. Then:
///
/// 1. `seq`: the record has a sequence number (GLS, PLXS) or a time offset (CGMS): `epoch` and that number. The
///    number is the device's own name for the record, whatever its bytes or time say.
/// 2. `time`: no sequence, but a device time (a cuff's or scale's stored measurements): that time as the device sent
///    it, with a hash of the raw bytes (FNV-1a, 64 bits): two readings in the same second, or under a clock that
///    was never set, differ by their values.
/// 3. `receipt`: neither (a heart-rate notification): the instant of receipt with the hash. Such values are only
///    ever notified, never stored and sent again, so every arrival is a reading.
/// 4. `correction`: a change-lane replacement is named by the sample it replaces.
///
/// Failure modes (docs/design/store.md, "Health tables"): a device that sends the same reading with different
/// bytes (a time stamp or status bit present in one delivery only) stores it twice; two distinct readings with
/// identical bytes and the same device time (a clock never set, equal values) are stored once; a sequence reset the
/// lane does not notice (no new epoch) makes new records look like old ones; a new epoch started without a real
/// reset stores the old records again. Free text (the device time) comes last, so no two different tuples make
/// the same key.
public enum HealthDedupKey {
    /// `device`: `deviceName(identityAddress:peripheralUid:)`.
    public static func make(device: String, sample: HealthSample) -> String {
        let stream = "\(device)/\(sample.characteristic)/\(sample.userIndex.map(String.init) ?? "-")"
        let metric = "\(sample.metricCode)/\(sample.occurrence)"
        if let sequence = sample.recordSequence {
            return "seq/\(stream)/\(metric)/\(sample.epoch)/\(sequence)"
        }
        let hash = fnv1a64Hex(sample.rawBytes ?? [])
        if let deviceTime = sample.deviceTime {
            return "time/\(stream)/\(metric)/\(hash)/\(deviceTime)"
        }
        return "receipt/\(stream)/\(metric)/\(hash)/\(sample.receivedAt.nanoseconds)"
    }

    /// The device part of a key: the identity address in upper case (BlueZ's spelling), else the registry uid.
    public static func deviceName(identityAddress: String?, peripheralUid: String) -> String {
        identityAddress.map { $0.uppercased() } ?? peripheralUid
    }

    /// The key of the sample that replaces `originalUid` (a sample is corrected once; its replacement may be
    /// corrected in turn).
    public static func correction(of originalUid: String) -> String { "correction/\(originalUid)" }

    /// FNV-1a, 64 bits (draft-eastlake-fnv §2), as 16 hex digits: enough to tell two readings of one device apart;
    /// not a defence against a device that forges collisions with its own readings.
    static func fnv1a64Hex(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let text = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
