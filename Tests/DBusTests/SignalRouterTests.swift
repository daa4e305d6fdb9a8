import Testing

@testable import DBus

/// The routing rules of `SignalRouter`, fed facts directly (no bus): which subscription gets which signal, and
/// how signals from a well-known sender are held until its owner is known.
@Suite struct SignalRouterTests {
    typealias Router = SignalRouter

    static func signal(
        from sender: String, path: DBusObjectPath = "/org/bluez/hci0", interface: String = "org.bluez.Adapter1",
        member: String = "Changed", arguments: [DBusValue] = []
    ) -> DBusSignal {
        DBusSignal(sender: sender, path: path, interface: interface, member: member, arguments: arguments)
    }

    static func ownerChanged(_ name: String, from old: String, to new: String) -> DBusSignal {
        DBusSignal(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameOwnerChanged", arguments: [.string(name), .string(old), .string(new)])
    }

    @Test func headerFieldsAndArgumentsSelectSubscriptions() {
        var router = Router()
        _ = router.add(1, rule: DBusMatchRule(interface: "org.bluez.Adapter1"))
        _ = router.add(2, rule: DBusMatchRule(pathNamespace: "/org/bluez/hci0/dev_A"))
        _ = router.add(3, rule: DBusMatchRule(member: "Changed", arguments: [0: "Powered"]))
        _ = router.add(4, rule: DBusMatchRule(sender: ":1.9"))

        let adapter = Self.signal(from: ":1.9", arguments: [.string("Powered")])
        #expect(router.route(adapter).map(\.subscription) == [1, 3, 4])

        let device = Self.signal(from: ":1.7", path: "/org/bluez/hci0/dev_A/service0001", interface: "x.y")
        #expect(router.route(device).map(\.subscription) == [2])

        let sibling = Self.signal(from: ":1.7", path: "/org/bluez/hci0/dev_AB", interface: "x.y")
        #expect(router.route(sibling).isEmpty, "path_namespace matches whole elements only")

        #expect(router.wantsSignal(path: "/x", interface: "a.b", member: "M", destination: nil), "rule 4 has only a sender")
        _ = router.remove(4)
        #expect(router.wantsSignal(path: "/x", interface: "org.bluez.Adapter1", member: "M", destination: nil))
        #expect(!router.wantsSignal(path: "/x", interface: "a.b", member: "M", destination: nil))
    }

    @Test func wellKnownSenderIsResolvedOnceAndWithdrawnWithItsLastSubscription() {
        var router = Router()
        let commands = router.add(1, rule: DBusMatchRule(sender: "org.bluez"))
        #expect(commands == [.addMatch(Router.ownerChangeRule(for: "org.bluez").text), .resolveOwner("org.bluez")])
        #expect(router.add(2, rule: DBusMatchRule(sender: "org.bluez", member: "X")).isEmpty)
        #expect(router.add(3, rule: DBusMatchRule(sender: ":1.4")).isEmpty, "unique names need no tracking")

        #expect(router.remove(1).commands.isEmpty)
        #expect(router.remove(2).commands == [.removeMatch(Router.ownerChangeRule(for: "org.bluez").text)])
        #expect(router.remove(2).rule == nil)
    }

    @Test func signalsBeforeOwnerResolutionAreHeldThenFilteredByTheOwner() {
        var router = Router()
        _ = router.add(1, rule: DBusMatchRule(sender: "org.bluez"))
        #expect(router.route(Self.signal(from: ":1.5", member: "Real")).isEmpty)
        #expect(router.route(Self.signal(from: ":1.6", member: "Impostor")).isEmpty)

        let released = router.ownerResolved("org.bluez", owner: ":1.5")
        #expect(released.map(\.signal.member) == ["Real"])

        #expect(router.route(Self.signal(from: ":1.5", member: "Later")).map(\.subscription) == [1])
        #expect(router.route(Self.signal(from: ":1.6", member: "Impostor")).isEmpty)
    }

    @Test func ownerChangeWhileResolvingReleasesHeldSignalsAgainstTheOldOwner() {
        var router = Router()
        _ = router.add(1, rule: DBusMatchRule(sender: "org.bluez"))
        _ = router.route(Self.signal(from: ":1.5", member: "FromOld"))
        let released = router.route(Self.ownerChanged("org.bluez", from: ":1.5", to: ":1.8"))
        #expect(released.map(\.signal.member) == ["FromOld"])
        #expect(router.route(Self.signal(from: ":1.5", member: "Stale")).isEmpty)
        #expect(router.route(Self.signal(from: ":1.8", member: "New")).map(\.subscription) == [1])

        // The GetNameOwner reply arrives after the change and agrees with it.
        #expect(router.ownerResolved("org.bluez", owner: ":1.8").isEmpty)
        #expect(router.route(Self.signal(from: ":1.8", member: "New")).count == 1)
    }

    @Test func nameWithoutOwnerDropsEverything() {
        var router = Router()
        _ = router.add(1, rule: DBusMatchRule(sender: "org.bluez"))
        _ = router.route(Self.signal(from: ":1.5"))
        #expect(router.ownerResolved("org.bluez", owner: nil).isEmpty)
        #expect(router.route(Self.signal(from: ":1.5")).isEmpty)
        _ = router.route(Self.ownerChanged("org.bluez", from: "", to: ":1.9"))
        #expect(router.route(Self.signal(from: ":1.9")).map(\.subscription) == [1])
    }

    @Test func heldSignalsAreBounded() {
        var router = Router()
        _ = router.add(1, rule: DBusMatchRule(sender: "org.bluez"))
        for index in 0..<(Router.heldSignalLimit + 10) {
            _ = router.route(Self.signal(from: ":1.5", arguments: [.uint32(UInt32(index))]))
        }
        let released = router.ownerResolved("org.bluez", owner: ":1.5")
        #expect(released.count == Router.heldSignalLimit)
        #expect(released.first?.signal.arguments == [.uint32(10)], "the oldest are dropped first")
    }
}
