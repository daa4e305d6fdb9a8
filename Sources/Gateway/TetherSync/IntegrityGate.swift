import SyncContract

/// One reason the gate refused a page. The cursor stays where it was; the next sync pulls the page again.
public struct GateViolation: Hashable, Sendable, CustomStringConvertible {
    public enum Rule: String, Hashable, Sendable {
        /// The page's `count` is not the number of changes it holds.
        case count
        /// The page's `checksum` is not the checksum of its changes (docs/specs/sync-api.yaml, "Page checksum").
        case checksum
        /// A change is malformed (a document missing or of the wrong kind, an invalid setting).
        case malformedChange
        /// The next cursor is unreadable or behind the cursor the page was asked for.
        case cursor
        /// A change refers to a device the gateway does not know and the feed never introduced, or deleted.
        case danglingReference
        /// After applying, the store does not hold what the change said.
        case notApplied
    }

    public var rule: Rule
    public var detail: String

    public init(_ rule: Rule, _ detail: String) {
        self.rule = rule
        self.detail = detail
    }

    public var description: String { "\(rule.rawValue): \(detail)" }
}

/// The integrity gate: pure checks of a pulled page before it is applied (counts, checksum, well-formed
/// changes, a cursor that does not move backward, no dangling references). `ChangeApplier.verify` checks the
/// store after applying; the cursor is committed only when both find nothing.
public enum IntegrityGate {
    /// What the gateway knows about a serial when the page arrives.
    public enum DeviceKnowledge: Hashable, Sendable {
        /// The gateway has met the device (it is in the local registry).
        case local
        /// The feed introduced it and it exists on the server.
        case remote
        /// The feed deleted it.
        case deleted
        case unknown
    }

    public static func check(
        _ page: ChangePage, requestedAfter: SyncCursor, knowledge: (String) -> DeviceKnowledge
    ) -> [GateViolation] {
        var violations: [GateViolation] = []
        if page.count != page.changes.count {
            violations.append(GateViolation(.count, "the page says \(page.count) changes and holds \(page.changes.count)"))
        }
        let checksum = PageChecksum.checksum(of: page.changes)
        if page.checksum != checksum {
            violations.append(GateViolation(.checksum, "the page says \(page.checksum), its changes hash to \(checksum)"))
        }
        if let next = SyncCursor(token: page.nextCursor) {
            if next < requestedAfter {
                violations.append(GateViolation(.cursor, "next_cursor \(next) is behind the requested \(requestedAfter)"))
            }
        } else {
            violations.append(GateViolation(.cursor, "next_cursor \"\(page.nextCursor)\" is not a cursor this gateway understands"))
        }
        // Devices as this page leaves them, change by change.
        var inPage: [String: DeviceKnowledge] = [:]
        for (index, change) in page.changes.enumerated() {
            if let problem = change.problem {
                violations.append(GateViolation(.malformedChange, "change \(index) (\(change.kind.rawValue) \(change.serial ?? "-")): \(problem)"))
                continue
            }
            // A health sample deletion names no device: a sample this gateway does not hold is another gateway's.
            guard let serial = change.serial else { continue }
            switch (change.kind, change.operation) {
            case (.device, .upsert):
                inPage[serial] = .remote
            case (.device, .delete):
                inPage[serial] = .deleted
            case (.deviceSettings, .upsert), (.deviceSettings, .delete):
                let known = inPage[serial] ?? knowledge(serial)
                switch known {
                case .local, .remote: break
                case .deleted, .unknown:
                    violations.append(
                        GateViolation(.danglingReference, "change \(index): settings for \(serial), which the feed \(known == .deleted ? "deleted" : "never introduced")"))
                }
            case (.healthSample, _):
                break
            }
        }
        return violations
    }
}
