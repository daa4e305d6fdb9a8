/// Several devices in one `tether firmware update` (issue 16, item 5: "Several devices in one command update one
/// after another and stop after a set number of failures"). Pure: the command feeds it each device's result and
/// asks whether to go on, and what to report and exit with at the end.
///
/// Rules:
/// 1. Devices are updated one after another, in the order named.
/// 2. A revert is a failure: the device is safe on its old image, but an image that reverts on one device will most
///    likely revert on the next, which is what the limit is for.
/// 3. Once `maxFailures` devices have failed, the rest are not touched (not one byte is sent to them).
/// 4. The exit status: 0 when every device named runs the new image; otherwise 1 when any device failed for a
///    reason other than a revert (it did not answer, refused a request, ...), else 6 (only reverts). Devices left
///    out by rule 3 make the status non-zero without changing 1 or 6.
public struct FirmwareBatch: Hashable, Sendable {
    public enum Result: String, Hashable, Sendable {
        /// The new image runs (confirmed, on test when asked, or it already ran).
        case updated
        case reverted
        case failed
    }

    public let devices: Int
    public let maxFailures: Int
    public private(set) var results: [Result] = []

    public init(devices: Int, maxFailures: Int) {
        self.devices = max(devices, 0)
        self.maxFailures = max(maxFailures, 1)
    }

    public var failures: Int { results.count { $0 != .updated } }

    /// Rule 3: whether the next device is to be updated.
    public var goesOn: Bool { results.count < devices && failures < maxFailures }

    public mutating func record(_ result: Result) {
        precondition(results.count < devices, "FirmwareBatch: more results than devices")
        results.append(result)
    }

    public var notTried: Int { devices - results.count }

    /// Rule 4.
    public var exitStatus: Int32 {
        if results.count == devices, failures == 0 { return 0 }
        return results.contains(.failed) || !results.contains(.reverted) ? 1 : 6
    }

    /// `3 devices: 1 updated, 1 reverted, 1 not tried (stopped after 1 failure)`.
    public var summary: String {
        var parts = ["\(results.count { $0 == .updated }) updated"]
        let reverted = results.count { $0 == .reverted }
        let failed = results.count { $0 == .failed }
        if reverted > 0 { parts.append("\(reverted) reverted") }
        if failed > 0 { parts.append("\(failed) failed") }
        if notTried > 0 {
            parts.append("\(notTried) not tried (stopped after \(failures) failure\(failures == 1 ? "" : "s"))")
        }
        return "\(devices) device\(devices == 1 ? "" : "s"): " + parts.joined(separator: ", ")
    }
}
