import ConnectionSupervisor
import Testing
import TetherPrimitives

/// A manual clock in milliseconds.
func ms(_ milliseconds: Int64) -> SupervisorInstant {
    SupervisorInstant(nanoseconds: milliseconds * 1_000_000)
}

let a: DeviceAddress = "C0:54:45:00:00:01"
let b: DeviceAddress = "C0:54:45:00:00:02"
let c: DeviceAddress = "C0:54:45:00:00:03"
let d: DeviceAddress = "C0:54:45:00:00:04"

func configuration(
    slots: Int = 5, burst: Int = 100, interval: Duration = .milliseconds(10), seed: UInt64 = 1
) -> SupervisorConfiguration {
    var configuration = SupervisorConfiguration()
    configuration.slotBudget = slots
    configuration.reconnectBurst = burst
    configuration.reconnectInterval = interval
    configuration.backoffBase = .milliseconds(100)
    configuration.backoffCap = .seconds(2)
    configuration.clearingTimeout = .seconds(5)
    configuration.seed = seed
    return configuration
}

func connects(_ orders: [SupervisorOrder]) -> [DeviceAddress] {
    orders.compactMap { if case .connect(let address) = $0 { address } else { nil } }
}

func timer(_ orders: [SupervisorOrder]) -> SupervisorInstant? {
    orders.compactMap { if case .armTimer(let at) = $0 { at } else { nil } }.last
}

@Suite struct ConnectionSupervisorRuleTests {
    @Test func onlyOneConnectIsInFlight() {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        #expect(supervisor.handle(.deviceWanted(a, at: ms(0))) == [.connect(a)])
        #expect(supervisor.handle(.deviceWanted(b, at: ms(1))) == [])
        #expect(supervisor.handle(.deviceWanted(c, at: ms(2))) == [])
        #expect(supervisor.connectInFlight == a)
        // The next device, oldest first, only once the previous attempt has an outcome.
        #expect(supervisor.handle(.connectSucceeded(a, at: ms(50))) == [.connect(b)])
        #expect(supervisor.handle(.connectFailed(b, .other, at: ms(60))).contains(.connect(c)))
        #expect(supervisor.status(of: a)?.phase == .connected)
    }

    @Test func theSlotBudgetLimitsConnectedDevices() {
        var supervisor = ConnectionSupervisor(configuration: configuration(slots: 2))
        for (index, address) in [a, b, c, d].enumerated() {
            _ = supervisor.handle(.deviceWanted(address, at: ms(Int64(index))))
        }
        #expect(supervisor.handle(.connectSucceeded(a, at: ms(10))) == [.connect(b)])
        #expect(supervisor.handle(.connectSucceeded(b, at: ms(20))) == [])
        #expect(supervisor.connectedCount == 2)
        #expect(supervisor.status(of: c)?.phase == .waiting)
        // A freed slot goes to the device waiting longest; the dropped one queues behind it.
        #expect(supervisor.handle(.disconnected(a, at: ms(30))) == [.connect(c)])
        #expect(supervisor.status(of: a)?.phase == .waiting)
    }

    @Test func failuresBackOffWithFullJitterUnderTheCap() throws {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        var now = ms(0)
        for attempt in 1...12 {
            now = now + .milliseconds(30)
            let orders = supervisor.handle(.connectFailed(a, .abort, at: now))
            let status = try #require(supervisor.status(of: a))
            #expect(status.attempts == attempt)
            #expect(status.lastError == .abort)
            guard case .backingOff(let until) = status.phase else {
                Issue.record("expected a backoff, got \(status.phase)")
                return
            }
            let ceiling = min(Duration.milliseconds(100) * (1 << (attempt - 1)), .seconds(2))
            #expect(until - now >= .zero && until - now <= ceiling)
            #expect(status.lastBackoff == until - now)
            #expect(connects(orders).isEmpty)
            #expect(timer(orders) == until)
            // Nothing happens before the deadline; at the deadline the device is tried again.
            if until > now {
                #expect(connects(supervisor.handle(.timerFired(at: until + .nanoseconds(-1)))).isEmpty)
            }
            now = until
            #expect(connects(supervisor.handle(.timerFired(at: now))) == [a])
        }
        // A Connect alone forgives nothing (its link may still fail, rule 3); a healthy link forgives everything.
        _ = supervisor.handle(.connectSucceeded(a, at: now + .milliseconds(1)))
        #expect(supervisor.status(of: a)?.attempts == 12)
        #expect(supervisor.status(of: a)?.lastError == .abort)
        _ = supervisor.handle(.linkHealthy(a, at: now + .milliseconds(2)))
        #expect(supervisor.status(of: a)?.attempts == 0)
        #expect(supervisor.status(of: a)?.lastError == nil)
    }

    /// Rule 3 for links: Connect succeeds every time, the set-up fails every time (AcquireNotify refused). Each
    /// failure is a failed attempt: Disconnect, then a backoff that grows — not a reconnect through the token
    /// bucket at once, which cost a Connect about once a second.
    @Test func aLinkThatFailsBeforeItIsHealthyBacksOffUntilALinkIsHealthy() throws {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        #expect(supervisor.handle(.deviceWanted(a, at: ms(0))) == [.connect(a)])
        var now = ms(0)
        var backoffs: [Duration] = []
        for attempt in 1...6 {
            now = now + .milliseconds(20)
            #expect(connects(supervisor.handle(.connectSucceeded(a, at: now))).isEmpty)
            now = now + .milliseconds(30)
            let orders = supervisor.handle(.linkFailed(a, at: now))
            #expect(orders.first == .disconnect(a))
            #expect(connects(orders).isEmpty)
            let status = try #require(supervisor.status(of: a))
            #expect(status.attempts == attempt)
            #expect(status.lastError == .linkFailed)
            guard case .abandoning(_, let retryDelay) = status.phase else {
                Issue.record("expected abandoning, got \(status.phase)")
                return
            }
            // Connected=false: the backoff starts, and nothing connects before its deadline.
            now = now + .milliseconds(5)
            #expect(connects(supervisor.handle(.disconnected(a, at: now))).isEmpty)
            guard case .backingOff(let until)? = supervisor.status(of: a)?.phase else {
                Issue.record("expected a backoff after Connected=false")
                return
            }
            #expect(until - now == retryDelay)
            #expect(retryDelay <= min(Duration.milliseconds(100) * (1 << (attempt - 1)), .seconds(2)))
            backoffs.append(retryDelay)
            if until > now {
                #expect(connects(supervisor.handle(.timerFired(at: until + .nanoseconds(-1)))).isEmpty)
            }
            now = until
            #expect(connects(supervisor.handle(.timerFired(at: now))) == [a])
        }
        #expect(backoffs.max()! > .milliseconds(100), "the backoff never grew past its base: \(backoffs)")
        // A Connect alone forgives nothing; the healthy link does. Then a dropped link reconnects at once (rule 5).
        now = now + .milliseconds(20)
        _ = supervisor.handle(.connectSucceeded(a, at: now))
        #expect(supervisor.status(of: a)?.attempts == 6)
        _ = supervisor.handle(.linkHealthy(a, at: now + .milliseconds(100)))
        #expect(supervisor.status(of: a)?.attempts == 0)
        #expect(supervisor.status(of: a)?.lastError == nil)
        #expect(supervisor.handle(.disconnected(a, at: now + .seconds(1))) == [.connect(a)])
    }

    @Test func aFailedLinkIsRetriedAfterItsBackoffEvenIfConnectedFalseNeverComesOrBluetoothdRestarts() throws {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        _ = supervisor.handle(.deviceWanted(b, at: ms(1)))
        _ = supervisor.handle(.connectSucceeded(a, at: ms(10)))
        _ = supervisor.handle(.connectSucceeded(b, at: ms(20)))
        let orders = supervisor.handle(.linkFailed(a, at: ms(30)))
        #expect(timer(orders) == ms(30) + .seconds(5))
        _ = supervisor.handle(.linkFailed(b, at: ms(40)))
        // a: Connected=false never comes; the clearing timeout bounds the wait, then the backoff runs.
        #expect(connects(supervisor.handle(.timerFired(at: ms(4000)))).isEmpty)
        #expect(connects(supervisor.handle(.timerFired(at: ms(5030)))).isEmpty)
        guard case .backingOff(let aUntil)? = supervisor.status(of: a)?.phase else {
            Issue.record("a: expected a backoff once the clearing timeout passed")
            return
        }
        #expect(aUntil <= ms(5030) + .milliseconds(100))
        let aRetry = max(aUntil, ms(5030))
        #expect(connects(supervisor.handle(.timerFired(at: aRetry))) == [a])
        // b: bluetoothd restarts while its failed link is being dropped (or just after its clearing timeout); its
        // backoff still applies.
        let restartAt = aRetry + .milliseconds(1)
        let restart = supervisor.handle(.bluezRestarted(at: restartAt))
        #expect(!connects(restart).contains(b))
        guard case .backingOff(let bUntil)? = supervisor.status(of: b)?.phase else {
            Issue.record("b: expected a backoff after the restart, got \(String(describing: supervisor.status(of: b)?.phase))")
            return
        }
        #expect(bUntil >= ms(5030) && bUntil <= restartAt + .milliseconds(100))
    }

    @Test func inProgressDisconnectsRemovesAndWaitsForConnectedFalse() {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        let orders = supervisor.handle(.connectFailed(a, .inProgress, at: ms(10)))
        #expect(Array(orders.prefix(2)) == [.disconnect(a), .removeDevice(a)])
        #expect(timer(orders) == ms(10) + .seconds(5))
        guard case .clearing = supervisor.status(of: a)?.phase else {
            Issue.record("expected clearing")
            return
        }
        // No retry while BlueZ still holds the link.
        #expect(connects(supervisor.handle(.deviceWanted(b, at: ms(20)))) == [b])
        _ = supervisor.handle(.connectFailed(b, .other, at: ms(25)))
        #expect(supervisor.status(of: a)?.lastError == .inProgress)
        // Connected=false: the backoff starts now.
        _ = supervisor.handle(.disconnected(a, at: ms(40)))
        guard case .backingOff(let until) = supervisor.status(of: a)?.phase else {
            Issue.record("expected a backoff after Connected=false")
            return
        }
        #expect(until >= ms(40) && until <= ms(40) + .milliseconds(100))
        #expect(connects(supervisor.handle(.timerFired(at: max(until, ms(400))))).contains(a))
    }

    @Test func clearingIsBoundedWhenConnectedFalseNeverComes() {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        _ = supervisor.handle(.connectFailed(a, .inProgress, at: ms(10)))
        #expect(connects(supervisor.handle(.timerFired(at: ms(4000)))).isEmpty)
        let orders = supervisor.handle(.timerFired(at: ms(5010)))
        guard case .backingOff(let until) = supervisor.status(of: a)?.phase else {
            #expect(connects(orders) == [a])  // a zero backoff retries at once
            return
        }
        #expect(timer(orders) == until)
        #expect(connects(supervisor.handle(.timerFired(at: until))) == [a])
    }

    @Test func aDroppedLinkIsReconnected() {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        _ = supervisor.handle(.connectSucceeded(a, at: ms(10)))
        #expect(supervisor.handle(.disconnected(a, at: ms(500))) == [.connect(a)])
        #expect(supervisor.status(of: a)?.phase == .connecting)
    }

    @Test func aBluetoothdRestartReconnectsEveryDeviceOneAtATime() throws {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        _ = supervisor.handle(.deviceWanted(b, at: ms(1)))
        _ = supervisor.handle(.connectSucceeded(a, at: ms(10)))
        _ = supervisor.handle(.connectSucceeded(b, at: ms(20)))
        _ = supervisor.handle(.deviceWanted(c, at: ms(30)))  // in flight when bluetoothd goes away
        #expect(supervisor.connectInFlight == c)
        let orders = supervisor.handle(.bluezRestarted(at: ms(100)))
        #expect(connects(orders).count == 1)
        #expect([a, b, c].allSatisfy { supervisor.status(of: $0)?.phase != .connected })
        // Reconnected one at a time: each success lets the next device go.
        let first = try #require(connects(orders).first)
        #expect(connects(supervisor.handle(.connectSucceeded(first, at: ms(110)))).count == 1)
        #expect(supervisor.connectedCount == 1)
    }

    @Test func shutdownDisconnectsEverythingAndStartsNothing() {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        _ = supervisor.handle(.deviceWanted(b, at: ms(1)))
        _ = supervisor.handle(.deviceWanted(c, at: ms(2)))
        _ = supervisor.handle(.connectSucceeded(a, at: ms(10)))  // b now in flight, c waiting
        let orders = supervisor.handle(.shutdown(at: ms(20)))
        let disconnects = orders.filter { if case .disconnect = $0 { true } else { false } }
        #expect(Set(disconnects) == [.disconnect(a), .disconnect(b)])
        #expect(connects(orders).isEmpty)
        #expect(supervisor.status(of: c) == nil)
        #expect(supervisor.handle(.deviceWanted(d, at: ms(30))) == [])
        #expect(supervisor.handle(.connectSucceeded(b, at: ms(31))) == [])
        _ = supervisor.handle(.disconnected(a, at: ms(40)))
        _ = supervisor.handle(.disconnected(b, at: ms(41)))
        #expect(supervisor.devices.isEmpty)
        #expect(supervisor.isShuttingDown)
    }

    @Test func anUnwantedDeviceIsDisconnectedAndForgotten() {
        var supervisor = ConnectionSupervisor(configuration: configuration())
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        _ = supervisor.handle(.connectSucceeded(a, at: ms(10)))
        #expect(supervisor.handle(.deviceUnwanted(a, at: ms(20))) == [.disconnect(a)])
        #expect(supervisor.status(of: a)?.phase == .disconnecting)
        #expect(supervisor.handle(.disconnected(a, at: ms(30))) == [])
        #expect(supervisor.status(of: a) == nil)
        // Unwanted while connecting: the success is answered with a disconnect.
        _ = supervisor.handle(.deviceWanted(b, at: ms(40)))
        _ = supervisor.handle(.deviceUnwanted(b, at: ms(41)))
        #expect(supervisor.handle(.connectSucceeded(b, at: ms(50))) == [.disconnect(b)])
    }

    @Test func theTokenBucketBoundsTheReconnectRate() throws {
        var supervisor = ConnectionSupervisor(configuration: configuration(burst: 2, interval: .seconds(1)))
        _ = supervisor.handle(.deviceWanted(a, at: ms(0)))
        _ = supervisor.handle(.connectSucceeded(a, at: ms(1)))
        #expect(supervisor.handle(.disconnected(a, at: ms(2))) == [.connect(a)])  // second token
        _ = supervisor.handle(.connectSucceeded(a, at: ms(3)))
        let orders = supervisor.handle(.disconnected(a, at: ms(4)))
        // No token left: the timer is armed for the next one instead of a storm.
        #expect(connects(orders).isEmpty)
        let next = try #require(timer(orders))
        #expect(next == ms(1000))
        #expect(connects(supervisor.handle(.timerFired(at: ms(999)))).isEmpty)
        #expect(connects(supervisor.handle(.timerFired(at: ms(1000)))) == [a])
    }

    @Test func theSameSeedMakesTheSameDecisions() {
        func run(seed: UInt64) -> [SupervisorOrder] {
            var supervisor = ConnectionSupervisor(configuration: configuration(seed: seed))
            var orders = supervisor.handle(.deviceWanted(a, at: ms(0)))
            for step in 1...20 {
                orders += supervisor.handle(.connectFailed(a, .abort, at: ms(Int64(step) * 5000)))
                orders += supervisor.handle(.timerFired(at: ms(Int64(step) * 5000 + 2500)))
            }
            return orders
        }
        #expect(run(seed: 42) == run(seed: 42))
        #expect(run(seed: 42) != run(seed: 43))
    }
}

/// A long seeded run against a random driver, checking the invariants after every input.
@Suite struct ConnectionSupervisorInvariantTests {
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func invariantsHoldOverALongRandomRun(seed: UInt64) {
        let slots = 3
        let burst = 3
        let interval = Duration.milliseconds(200)
        let cap = Duration.seconds(2)
        var config = configuration(slots: slots, burst: burst, interval: interval, seed: seed)
        config.backoffCap = cap
        var supervisor = ConnectionSupervisor(configuration: config)
        var random = SplitMix64(seed: seed &* 7919)
        let addresses = (1...10).map { DeviceAddress("C0:54:45:00:00:\($0)") }

        var now = ms(0)
        var pendingConnect: DeviceAddress?
        var linkUp: Set<DeviceAddress> = []
        var pendingDisconnects: Set<DeviceAddress> = []
        var connectTimes: [SupervisorInstant] = []

        func apply(_ input: SupervisorInput) {
            let orders = supervisor.handle(input)
            for order in orders {
                switch order {
                case .connect(let address):
                    #expect(pendingConnect == nil, "a second connect while one is in flight")
                    pendingConnect = address
                    connectTimes.append(now)
                case .disconnect(let address):
                    if pendingConnect == address { pendingConnect = nil }
                    pendingDisconnects.insert(address)
                case .removeDevice:
                    break
                case .armTimer(let at):
                    #expect(at >= now)
                }
            }
            // Invariants.
            let phases = supervisor.devices.values.map(\.phase)
            #expect(phases.count { $0 == .connecting } <= 1)
            #expect(supervisor.connectedCount + phases.count { $0 == .connecting } <= slots)
            for status in supervisor.devices.values {
                if let backoff = status.lastBackoff { #expect(backoff >= .zero && backoff <= cap) }
                if case .backingOff(let until) = status.phase { #expect(until - now <= cap) }
            }
        }

        for _ in 0..<5000 {
            now = now + .milliseconds(Int64(random.next() % 150))
            if let armed = supervisor.armedTimer, armed <= now { apply(.timerFired(at: now)) }
            switch random.next() % 10 {
            case 0, 1:
                apply(.deviceWanted(addresses[Int(random.next() % 10)], at: now))
            case 2:
                apply(.deviceUnwanted(addresses[Int(random.next() % 10)], at: now))
            case 3, 4, 5:
                if let address = pendingConnect {
                    pendingConnect = nil
                    switch random.next() % 4 {
                    case 0: apply(.connectFailed(address, .inProgress, at: now))
                    case 1: apply(.connectFailed(address, .abort, at: now))
                    case 2: apply(.connectFailed(address, .other, at: now))
                    default:
                        linkUp.insert(address)
                        apply(.connectSucceeded(address, at: now))
                    }
                }
            case 6:
                if let address = pendingDisconnects.randomElement(using: &random) {
                    pendingDisconnects.remove(address)
                    linkUp.remove(address)
                    apply(.disconnected(address, at: now))
                }
            case 7:
                if let address = linkUp.randomElement(using: &random) {
                    switch random.next() % 3 {
                    case 0: apply(.linkFailed(address, at: now))  // its Disconnect order is pending now
                    case 1: apply(.linkHealthy(address, at: now))
                    default:
                        linkUp.remove(address)
                        apply(.disconnected(address, at: now))
                    }
                }
            case 8:
                if random.next() % 50 == 0 {
                    pendingConnect = nil
                    linkUp.removeAll()
                    pendingDisconnects.removeAll()
                    apply(.bluezRestarted(at: now))
                }
            default:
                apply(.timerFired(at: now))
            }
        }
        // The token bucket: any window of 10 intervals holds at most burst + 10 connects.
        for (index, start) in connectTimes.enumerated() {
            let inWindow = connectTimes[index...].prefix { $0 - start < interval * 10 }.count
            #expect(inWindow <= burst + 10)
        }
        #expect(connectTimes.count > 50)

        apply(.shutdown(at: now))
        #expect(supervisor.devices.values.allSatisfy { $0.phase == .disconnecting || $0.phase != .connected })
        #expect(supervisor.devices.values.allSatisfy { $0.phase != .waiting && $0.phase != .connecting })
    }
}
