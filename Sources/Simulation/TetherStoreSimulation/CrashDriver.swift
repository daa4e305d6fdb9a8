import TetherDeviceModel
import Foundation
import LinkProtocol
import TetherStore
import TetherPrimitives

/// The device half of the crash test. It plays seeded firmware models (`DeviceModel`, whose event store is
/// the device's non-volatile memory and outlives every gateway crash) against a `CrashGateway` child process,
/// SIGKILLs the child at random moments, restarts it on the same database, and checks after every kill and at
/// the end:
///
/// - every event a firmware released (it saw an ACK covering it) is in the database, exactly once, with exactly
///   one create command in the outbox — an ACK was never sent before its commit;
/// - once the kills stop, the firmware delivers everything else: every event it recorded is stored, and
///   nothing else is.
///
/// Real time, real processes, real fsyncs: the seed fixes the device behaviour and the kill schedule, not the
/// interleaving.
public struct CrashDriver {
    public struct Configuration: Sendable {
        public var gatewayExecutable: String
        public var databasePath: String
        /// Where the children's stderr goes (one file, appended).
        public var logPath: String
        public var seed: UInt64 = 1
        public var devices = 3
        public var kills = 50
        /// Time between two hits of one device while kills are still to come.
        public var hitInterval: Duration = .milliseconds(12)
        /// How long each child lives before it is killed, drawn uniformly (milliseconds).
        public var lifetimeMilliseconds: ClosedRange<Int64> = 30...450
        /// Per child life: the chance that one device reboots, and that one device loses its link.
        public var rebootChance = 0.15
        public var linkLossChance = 0.25
        public var settleTimeout: Duration = .seconds(30)
        public var startTimeout: Duration = .seconds(30)
        public var progress: (@Sendable (String) -> Void)?

        public init(gatewayExecutable: String, databasePath: String, logPath: String) {
            self.gatewayExecutable = gatewayExecutable
            self.databasePath = databasePath
            self.logPath = logPath
        }
    }

    public struct Report: Sendable, CustomStringConvertible {
        public var kills = 0
        public var createdEvents = 0
        public var releasedEvents = 0
        /// Events released while kills were still to come (ACKs that a later crash had to honour).
        public var releasedBeforeLastKill = 0
        public var storedEvents = 0
        public var anchors = 0
        public var reboots = 0
        public var linkLosses = 0
        public var verifications = 0
        public var violations: [String] = []
        public var elapsed: Duration = .zero

        public var description: String {
            "\(kills) kills, \(createdEvents) events recorded, \(releasedEvents) released (\(releasedBeforeLastKill) before the last kill), "
                + "\(storedEvents) stored, \(anchors) anchors, \(reboots) reboots, \(linkLosses) link losses, \(verifications) verifications, "
                + "\(violations.count) violations, \(elapsed)"
        }
    }

    public static func run(_ configuration: Configuration) -> Report {
        signal(SIGPIPE, SIG_IGN)  // a write to a child just killed must fail, not kill us
        var run = Run(configuration: configuration)
        run.execute()
        return run.report
    }

    private enum Fault { case reboot, linkLoss }

    private struct Slot {
        var firmware: DeviceModel
        var mtu: Int
        var connected = false
        var reconnectAt: Timestamp?
        var nextHit: Timestamp
        /// A reboot or link loss planned for this child's life.
        var pendingFault: (at: Timestamp, fault: Fault)?
    }

    private struct Run {
        let configuration: Configuration
        var report = Report()
        var random: SplitMix64
        var slots: [Slot] = []
        var gateway: GatewayProcess?
        var created: Set<EventKey> = []
        var released: Set<EventKey> = []
        var claimedStored: Set<EventKey> = []
        var killAt = Timestamp(nanoseconds: 0)
        let started = WallClock.now()

        init(configuration: Configuration) {
            self.configuration = configuration
            self.random = SplitMix64(seed: configuration.seed)
            let now = WallClock.now()
            for index in 0..<configuration.devices {
                let serial = "CRASH-\(configuration.seed)-\(index)"
                let profile: DeviceProfile
                switch index % 3 {
                case 0: profile = .v1_4(serial: serial)
                case 1: profile = .v2_0(serial: serial)
                default: profile = .v1_0(serial: serial)
                }
                let drift = Double.random(in: -40...40, using: &random)
                slots.append(Slot(
                    firmware: DeviceModel(profile: profile, bootCounter: UInt16(1 + index), driftPPM: drift, bootedAt: now),
                    mtu: profile.versions.upperBound >= 2 ? 247 : 23,
                    nextHit: now.advanced(by: configuration.hitInterval * index / max(configuration.devices, 1))))
            }
        }

        mutating func execute() {
            defer { report.elapsed = started.duration(to: WallClock.now()) }
            guard startGateway() else { return }
            scheduleKill()
            var settleDeadline: Timestamp?
            while true {
                let now = WallClock.now()
                let killing = report.kills < configuration.kills
                if killing {
                    recordDueHits(at: now)
                    if now >= killAt {
                        killAndRestart()
                        if !report.violations.isEmpty { return }
                        continue
                    }
                } else if settleDeadline == nil {
                    settleDeadline = now.advanced(by: configuration.settleTimeout)
                    configuration.progress?("kills done; letting the devices deliver the rest")
                }
                fireFirmwareTimers(at: now)
                reconnectDue(at: now)
                if !killing, slots.allSatisfy({ $0.firmware.eventStore.isEmpty }) { break }
                if let settleDeadline, now >= settleDeadline {
                    let left = slots.map(\.firmware.eventStore.count).reduce(0, +)
                    // What each device holding events was doing, for the next person to read (seen twice in fresh-clone
                    // runs: a few events held for the whole settle, not a slow machine).
                    let holding = slots.indices.filter { !slots[$0].firmware.eventStore.isEmpty }.map { index in
                        "device \(index): \(slots[index].firmware.eventStore.count) held, connected=\(slots[index].connected), "
                            + "reconnectAt=\(slots[index].reconnectAt.map { "\($0.nanoseconds - now.nanoseconds) ns" } ?? "none"), "
                            + "firmware deadline=\(slots[index].firmware.nextDeadline.map { "\($0.nanoseconds - now.nanoseconds) ns" } ?? "none")"
                    }
                    report.violations.append(
                        "\(left) events still on the devices \(configuration.settleTimeout) after the last kill: \(holding.joined(separator: "; "))")
                    break
                }
                pump(until: nextDeadline(after: now))
                if !report.violations.isEmpty { return }
            }
            gateway?.stop()
            gateway = nil
            verify(final: true)
        }

        // MARK: Devices

        private mutating func recordDueHits(at now: Timestamp) {
            for index in slots.indices where slots[index].nextHit <= now {
                let duration = UInt16.random(in: 300...4000, using: &random)
                let intensity = UInt8.random(in: 10...100, using: &random)
                let (event, actions) = slots[index].firmware.recordHit(durationMilliseconds: duration, intensity: intensity, at: now)
                if let event { created.insert(key(index, event)) }
                apply(actions, device: index, at: now)
                slots[index].nextHit = slots[index].nextHit.advanced(by: configuration.hitInterval)
            }
        }

        private mutating func fireFirmwareTimers(at now: Timestamp) {
            for index in slots.indices where slots[index].connected {
                if let deadline = slots[index].firmware.nextDeadline, deadline <= now {
                    apply(slots[index].firmware.handleTimeout(at: now), device: index, at: now)
                }
            }
        }

        private mutating func reconnectDue(at now: Timestamp) {
            for index in slots.indices {
                guard let at = slots[index].reconnectAt, at <= now else { continue }
                slots[index].reconnectAt = nil
                connect(index, at: now)
            }
        }

        private mutating func connect(_ index: Int, at now: Timestamp) {
            slots[index].firmware.connected(mtu: slots[index].mtu, at: now)
            slots[index].connected = true
            send(.connect(device: index, mtu: slots[index].mtu, address: "02:00:00:00:00:\(String(format: "%02X", index))"))
        }

        private mutating func dropLink(_ index: Int, at now: Timestamp, tellGateway: Bool) {
            guard slots[index].connected else { return }
            slots[index].connected = false
            slots[index].firmware.disconnected(at: now)
            if tellGateway { send(.disconnected(device: index)) }
            slots[index].reconnectAt = now.advanced(by: .milliseconds(30))
        }

        private mutating func apply(_ actions: [DeviceAction], device index: Int, at now: Timestamp) {
            for action in actions {
                switch action {
                case .notify(let bytes):
                    send(.received(device: index, bytes: bytes))
                case .disconnect:
                    dropLink(index, at: now, tellGateway: true)
                case .released(let events):
                    for event in events {
                        let key = key(index, event)
                        released.insert(key)
                        if report.kills < configuration.kills { report.releasedBeforeLastKill += 1 }
                    }
                case .settings:
                    break
                }
            }
        }

        private func key(_ index: Int, _ event: HitEvent) -> EventKey {
            EventKey(serial: slots[index].firmware.profile.serial, bootCounter: event.bootCounter, sequence: Int64(event.eventSequence))
        }

        // MARK: The gateway child

        private mutating func startGateway() -> Bool {
            do {
                gateway = try GatewayProcess(executable: configuration.gatewayExecutable, databasePath: configuration.databasePath, logPath: configuration.logPath)
            } catch {
                report.violations.append("cannot start the gateway: \(error)")
                return false
            }
            let deadline = WallClock.now().advanced(by: configuration.startTimeout)
            while WallClock.now() < deadline {
                guard let lines = gateway?.readLines(timeoutMilliseconds: 20) else {
                    report.violations.append("the gateway exited before it was ready (see \(configuration.logPath))")
                    return false
                }
                if lines.contains("ready") {
                    let now = WallClock.now()
                    for index in slots.indices where slots[index].reconnectAt == nil { connect(index, at: now) }
                    return true
                }
            }
            report.violations.append("the gateway was not ready within \(configuration.startTimeout)")
            return false
        }

        private mutating func scheduleKill() {
            let lifetime = Int64.random(in: configuration.lifetimeMilliseconds, using: &random)
            killAt = WallClock.now().advanced(by: .milliseconds(lifetime))
            // Now and then a device reboots or loses its link during this life.
            if Double.random(in: 0..<1, using: &random) < configuration.rebootChance {
                let index = Int.random(in: slots.indices, using: &random)
                let at = Int64.random(in: 0...lifetime, using: &random)
                slots[index].pendingFault = (WallClock.now().advanced(by: .milliseconds(at)), .reboot)
            } else if Double.random(in: 0..<1, using: &random) < configuration.linkLossChance {
                let index = Int.random(in: slots.indices, using: &random)
                let at = Int64.random(in: 0...lifetime, using: &random)
                slots[index].pendingFault = (WallClock.now().advanced(by: .milliseconds(at)), .linkLoss)
            }
        }

        private mutating func killAndRestart() {
            gateway?.kill()
            gateway = nil
            report.kills += 1
            let now = WallClock.now()
            for index in slots.indices {
                slots[index].pendingFault = nil
                dropLink(index, at: now, tellGateway: false)
                slots[index].reconnectAt = nil
            }
            verify(final: false)
            if report.kills % 10 == 0 { configuration.progress?("kill \(report.kills): \(released.count) events released so far") }
            guard report.violations.isEmpty, startGateway() else { return }
            scheduleKill()
        }

        private mutating func send(_ line: CrashLine) {
            gateway?.send(line.text + "\n")
        }

        /// Reads the gateway's output until `deadline`, acting on each line.
        private mutating func pump(until deadline: Timestamp) {
            let now = WallClock.now()
            applyDueFaults(at: now)
            let wait = max(0, min(5, (deadline.nanoseconds - now.nanoseconds) / 1_000_000))
            guard let gateway else { return }
            guard let lines = gateway.readLines(timeoutMilliseconds: Int32(wait)) else {
                report.violations.append("the gateway exited on its own (see \(configuration.logPath))")
                return
            }
            let at = WallClock.now()
            for text in lines {
                switch CrashLine(text) {
                case .write(let index, let bytes)? where slots.indices.contains(index):
                    guard slots[index].connected else { continue }
                    apply(slots[index].firmware.received(bytes, at: at), device: index, at: at)
                case .gatewayDisconnect(let index)? where slots.indices.contains(index):
                    dropLink(index, at: at, tellGateway: false)
                case .stored(_, let key)?:
                    claimedStored.insert(key)
                default:
                    report.violations.append("unexpected line from the gateway: \(text)")
                }
            }
        }

        private mutating func applyDueFaults(at now: Timestamp) {
            for index in slots.indices {
                guard let (at, fault) = slots[index].pendingFault, at <= now else { continue }
                slots[index].pendingFault = nil
                switch fault {
                case .reboot:
                    report.reboots += 1
                    let wasConnected = slots[index].connected
                    slots[index].firmware.reboot(at: now)
                    slots[index].connected = false
                    if wasConnected { send(.disconnected(device: index)) }
                    slots[index].reconnectAt = now.advanced(by: .milliseconds(30))
                case .linkLoss:
                    report.linkLosses += 1
                    dropLink(index, at: now, tellGateway: true)
                }
            }
        }

        private func nextDeadline(after now: Timestamp) -> Timestamp {
            var deadline = now.advanced(by: .milliseconds(5))
            if report.kills < configuration.kills {
                deadline = min(deadline, killAt)
                for slot in slots { deadline = min(deadline, slot.nextHit) }
            }
            for slot in slots {
                if slot.connected, let at = slot.firmware.nextDeadline { deadline = min(deadline, at) }
                if let at = slot.reconnectAt { deadline = min(deadline, at) }
            }
            return deadline
        }

        // MARK: Checks

        /// With no gateway running: what the devices were told is stored must be stored, once.
        private mutating func verify(final: Bool) {
            report.verifications += 1
            let contents: StoreContents
            do {
                let database = try GatewayDatabase(path: configuration.databasePath)
                contents = try database.contents()
                if final {
                    let problems = try database.integrityProblems()
                    if !problems.isEmpty { report.violations.append("integrity: \(problems.prefix(5))") }
                }
            } catch {
                report.violations.append("cannot read the database: \(error)")
                return
            }
            let serials = Dictionary(uniqueKeysWithValues: contents.devices.compactMap { device in device.id.map { ($0, device.serial) } })
            var stored: [EventKey: Int] = [:]
            for event in contents.events {
                guard let serial = serials[event.deviceId] else {
                    report.violations.append("event row \(event.id ?? -1) names no device")
                    continue
                }
                stored[EventKey(serial: serial, bootCounter: event.bootCounter, sequence: event.sequence), default: 0] += 1
            }
            var creates: [String: Int] = [:]
            for command in contents.outbox where command.entityType == .consumptionEvent && command.operation == .create {
                creates[command.entityId, default: 0] += 1
            }
            for key in released where stored[key] == nil {
                report.violations.append("\(key) was ACKed (the device forgot it) but is not in the database")
            }
            for key in claimedStored where stored[key] == nil {
                report.violations.append("\(key) was reported stored by the gateway but is not in the database")
            }
            for (key, count) in stored {
                if count != 1 { report.violations.append("\(key) is stored \(count) times") }
                let commands = creates[OutboxEntity.consumptionEvent(key).id] ?? 0
                if commands != 1 { report.violations.append("\(key) has \(commands) create commands") }
                if !created.contains(key) { report.violations.append("\(key) is stored but no device recorded it") }
            }
            if final {
                for key in created where stored[key] == nil {
                    report.violations.append("\(key) was recorded but never delivered")
                }
                report.createdEvents = created.count
                report.releasedEvents = released.count
                report.storedEvents = stored.count
                report.anchors = contents.anchors.count
            }
        }
    }
}
