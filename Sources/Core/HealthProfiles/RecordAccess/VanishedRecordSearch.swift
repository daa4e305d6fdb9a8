/// Which of the records the gateway took from a device the device no longer holds, although nobody asked it to
/// delete them (issue 14, the change lane: "a record that disappeared from the device"), found by counting: a pure
/// search over "Report Number of Stored Records" with operator 0x04 "within range of (inclusive)" and filter type
/// 0x01, the sequence number (GSS §3.178.2; GLS v1.0.1 §4.11). Nothing in it reads a record again.
///
/// Rules:
/// 1. The gateway's keys of the epoch (every record key it stored a sample under, up to the committed cursor) are
///    the expected ones. The first count asks for the range they span; a range whose count equals the keys the
///    gateway holds in it is whole, a count of 0 means all of them went, and anything else splits the range at its
///    middle key and counts both halves. A device may hold records the gateway has no key for between its keys (a
///    meter's error record that carried no value was taken but stored no sample): a range holding more than the
///    gateway expects is split too, and since its halves are bounded by expected keys, a range of one key never
///    holds such a record. So a key is named vanished only when the range of that key alone counted 0. What such
///    records can hide is a vanished record in the same range (a whole-looking count): a finding missed, never one
///    made up. One key counted more than once contradicts the device's unique keys: the search stops, finding
///    nothing.
/// 2. At most `requestBudget` counts. A search that needs more stops and finds nothing: k vanished records among n
///    cost about 2·k·log2(n) counts, so the default budget of 64 covers a few deletions in a meter's memory, and a
///    wholesale change is not a case for tombstones.
/// 3. What went missing is not all vanished. A meter whose memory is full drops its oldest records, and the
///    gateway's own deletion (RecordTransfer rule 7) removes every record up to a key: both take a run from the
///    bottom. So only keys above the lowest key the device still holds are vanished: records deleted from the
///    middle, as a person deleting a reading on the meter does. When the device holds none of the keys, nothing is
///    vanished: a memory cleared without a new numbering cannot be told from a full purge.
public struct VanishedRecordSearch: Hashable, Sendable {
    public enum Finding: Hashable, Sendable {
        /// The keys that vanished (rule 3), ascending; empty when every record the gateway took is still there or
        /// went from the bottom.
        case vanished([UInt16])
        /// Rule 1: the device counted more than one record under the one key `range` names.
        case contradicted(range: ClosedRange<UInt16>, expected: Int, counted: UInt32)
        /// Rule 2.
        case budgetExhausted(requests: Int)
    }

    public static let defaultRequestBudget = 64

    /// The gateway's keys, ascending, without repeats.
    public let keys: [UInt16]
    public let requestBudget: Int
    /// Index ranges into `keys` still to count; the last is counted next.
    private var pending: [ClosedRange<Int>]
    private var asking: ClosedRange<Int>?
    private var missing: [Int] = []
    public private(set) var requests = 0
    public private(set) var finding: Finding?

    public init(keys: some Sequence<UInt16>, requestBudget: Int = Self.defaultRequestBudget) {
        self.keys = Array(Set(keys)).sorted()
        self.requestBudget = max(requestBudget, 1)
        pending = self.keys.isEmpty ? [] : [0...(self.keys.count - 1)]
        if self.keys.isEmpty { finding = .vanished([]) }
    }

    /// The key range to count next, or nil when the search has its finding.
    public mutating func nextRange() -> ClosedRange<UInt16>? {
        guard finding == nil else { return nil }
        if let asking { return keys[asking.lowerBound]...keys[asking.upperBound] }
        guard let next = pending.popLast() else {
            finding = .vanished(Self.vanished(keys: keys, missing: missing))
            return nil
        }
        guard requests < requestBudget else {
            finding = .budgetExhausted(requests: requests)
            return nil
        }
        requests += 1
        asking = next
        return keys[next.lowerBound]...keys[next.upperBound]
    }

    /// The device's count for the range `nextRange` gave.
    public mutating func counted(_ count: UInt32) {
        guard finding == nil, let range = asking else { return }
        asking = nil
        let expected = range.count
        if count == 0 {
            missing += Array(range)
        } else if Int(count) == expected {
            return  // whole (rule 1)
        } else if range.count == 1 {
            // One key, more than one record: the device's keys are not unique.
            finding = .contradicted(range: keys[range.lowerBound]...keys[range.upperBound], expected: expected, counted: count)
        } else {
            // Fewer than expected, or more (records the gateway has no key for): split at the middle key.
            let middle = range.lowerBound + (range.count - 1) / 2
            pending.append((middle + 1)...range.upperBound)
            pending.append(range.lowerBound...middle)
        }
    }

    /// Rule 3: the missing keys above the lowest key still held.
    static func vanished(keys: [UInt16], missing: [Int]) -> [UInt16] {
        let gone = Set(missing)
        guard let lowestHeld = keys.indices.first(where: { !gone.contains($0) }) else { return [] }
        return gone.filter { $0 > lowestHeld }.sorted().map { keys[$0] }
    }
}

/// How a cold lane's audit for vanished records ended (RecordTransfer rule 8).
public enum RecordAuditEnd: Hashable, Sendable {
    /// The search ran to its end.
    case finding(VanishedRecordSearch.Finding)
    /// A count did not end counted: the device refused it (no "within range", say), the link dropped, or it timed out.
    case stopped(RecordAccessOutcome)
    case refusedByClient(RecordCountRefusal)
    /// Nothing committed, a fenced epoch, or a stream keyed by time offsets: nothing to audit.
    case notApplicable
    /// The store could not read the keys: nothing is tombstoned on a guess.
    case keysUnreadable
}
