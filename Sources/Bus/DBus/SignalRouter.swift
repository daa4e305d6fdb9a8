/// Decides which subscriptions receive each signal. Pure state, no I/O: the loop thread feeds it facts
/// (subscribed, unsubscribed, signal received, owner resolved) and carries out the commands it returns.
///
/// Why owners are tracked: the bus delivers signals whose sender is a well-known name (`org.bluez`) but stamps
/// them with the owner's unique name (`:1.5`), so a subscription to `org.bluez` can only be told apart from a
/// broader one by knowing who owns `org.bluez`. For each such name the router subscribes to its
/// NameOwnerChanged and asks GetNameOwner once. Messages from the bus arrive in the order the bus processed
/// them, so applying NameOwnerChanged signals and the GetNameOwner reply in arrival order is exact. Signals
/// that arrive before the owner is known are held and released against the owner the next event reveals.
struct SignalRouter {
    typealias SubscriptionID = UInt64

    /// Work for the loop thread; each is one message to the bus driver.
    enum Command: Equatable {
        case addMatch(String)
        case removeMatch(String)
        case resolveOwner(String)
    }

    struct Delivery {
        let subscription: SubscriptionID
        let signal: DBusSignal
    }

    /// A held signal is released only if its sender turns out to be the owner.
    private struct HeldSignal {
        let subscription: SubscriptionID
        let signal: DBusSignal
    }

    private enum Owner {
        case resolving(held: [HeldSignal])
        case known(String?)
    }

    private struct TrackedName {
        var subscriberCount: Int
        var owner: Owner
    }

    /// Bounds the signals held per name while its owner is being resolved (one round trip to the bus).
    static let heldSignalLimit = 4096

    static let busName = "org.freedesktop.DBus"
    static let busPath = DBusObjectPath("/org/freedesktop/DBus")
    static let busInterface = "org.freedesktop.DBus"

    private var rules: [SubscriptionID: DBusMatchRule] = [:]
    private var trackedNames: [String: TrackedName] = [:]

    var isEmpty: Bool { rules.isEmpty }

    /// Registers a subscription; the caller sends the subscription's own AddMatch first, then these commands.
    mutating func add(_ id: SubscriptionID, rule: DBusMatchRule) -> [Command] {
        rules[id] = rule
        guard let name = Self.trackedName(of: rule) else { return [] }
        if var tracked = trackedNames[name] {
            tracked.subscriberCount += 1
            trackedNames[name] = tracked
            return []
        }
        trackedNames[name] = TrackedName(subscriberCount: 1, owner: .resolving(held: []))
        return [.addMatch(Self.ownerChangeRule(for: name).text), .resolveOwner(name)]
    }

    /// Forgets a subscription; the caller sends the subscription's own RemoveMatch, then these commands.
    /// Returns the rule that was registered, if any.
    mutating func remove(_ id: SubscriptionID) -> (rule: DBusMatchRule?, commands: [Command]) {
        guard let rule = rules.removeValue(forKey: id) else { return (nil, []) }
        guard let name = Self.trackedName(of: rule), var tracked = trackedNames[name] else { return (rule, []) }
        tracked.subscriberCount -= 1
        guard tracked.subscriberCount == 0 else {
            trackedNames[name] = tracked
            return (rule, [])
        }
        trackedNames[name] = nil
        return (rule, [.removeMatch(Self.ownerChangeRule(for: name).text)])
    }

    /// Whether any subscription (or the owner tracking) could want this signal: decides if its body is decoded.
    func wantsSignal(path: DBusObjectPath, interface: String, member: String, destination: String?) -> Bool {
        if interface == Self.busInterface, member == "NameOwnerChanged", !trackedNames.isEmpty { return true }
        return rules.values.contains {
            $0.matchesHeader(path: path, interface: interface, member: member, destination: destination)
        }
    }

    /// Routes a received signal; may also release signals held for an owner that this signal reveals.
    mutating func route(_ signal: DBusSignal) -> [Delivery] {
        var deliveries = applyOwnerChange(signal)
        for (id, rule) in rules.sorted(by: { $0.key < $1.key }) {
            guard
                rule.matchesHeader(
                    path: signal.path, interface: signal.interface, member: signal.member,
                    destination: signal.destination),
                rule.matchesArguments(signal.arguments)
            else { continue }
            guard let sender = rule.sender else {
                deliveries.append(Delivery(subscription: id, signal: signal))
                continue
            }
            guard Self.trackedName(of: rule) != nil else {
                if sender == signal.sender { deliveries.append(Delivery(subscription: id, signal: signal)) }
                continue
            }
            switch trackedNames[sender]?.owner {
            case .known(let owner)?:
                if owner == signal.sender { deliveries.append(Delivery(subscription: id, signal: signal)) }
            case .resolving(var held)?:
                if held.count >= Self.heldSignalLimit { held.removeFirst() }
                held.append(HeldSignal(subscription: id, signal: signal))
                trackedNames[sender]?.owner = .resolving(held: held)
            case nil:
                continue
            }
        }
        return deliveries
    }

    /// The GetNameOwner reply for `name` (nil: the name has no owner).
    mutating func ownerResolved(_ name: String, owner: String?) -> [Delivery] {
        guard let tracked = trackedNames[name] else { return [] }
        trackedNames[name]?.owner = .known(owner)
        guard case .resolving(let held) = tracked.owner else { return [] }
        return release(held, owner: owner)
    }

    private mutating func applyOwnerChange(_ signal: DBusSignal) -> [Delivery] {
        guard signal.sender == Self.busName, signal.interface == Self.busInterface,
            signal.member == "NameOwnerChanged", signal.arguments.count == 3,
            let name = signal.arguments[0].stringValue, let oldOwner = signal.arguments[1].stringValue,
            let newOwner = signal.arguments[2].stringValue, let tracked = trackedNames[name]
        else { return [] }
        trackedNames[name]?.owner = .known(newOwner.isEmpty ? nil : newOwner)
        guard case .resolving(let held) = tracked.owner else { return [] }
        // Everything held arrived before this change, so it was sent while `oldOwner` owned the name.
        return release(held, owner: oldOwner.isEmpty ? nil : oldOwner)
    }

    private func release(_ held: [HeldSignal], owner: String?) -> [Delivery] {
        held.filter { rules[$0.subscription] != nil && $0.signal.sender == owner }
            .map { Delivery(subscription: $0.subscription, signal: $0.signal) }
    }

    /// The well-known sender name a rule needs owner tracking for, if any.
    private static func trackedName(of rule: DBusMatchRule) -> String? {
        guard let sender = rule.sender, !WireNames.isUniqueName(sender), sender != busName else { return nil }
        return sender
    }

    static func ownerChangeRule(for name: String) -> DBusMatchRule {
        DBusMatchRule(
            sender: busName, interface: busInterface, member: "NameOwnerChanged", path: busPath,
            arguments: [0: name]
        )
    }
}
