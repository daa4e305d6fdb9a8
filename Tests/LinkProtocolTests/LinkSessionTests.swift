import Testing
@testable import LinkProtocol
import TetherSettings

@Suite("Gateway link session (§6, §8, §11)")
struct LinkSessionTests {
    @Test("connecting sends HELLO with the gateway's versions and window, in a version-1 header (§2.2, §6.2)")
    func hello() throws {
        var harness = SessionHarness()
        harness.connect()
        let (header, message) = try #require(harness.sent.first)
        #expect(header.version == 1)
        #expect(header.sequence == SequenceNumber(0))
        #expect(message == .hello(Hello(versions: 1...2, window: 16)))
        #expect(harness.timers[.request] == t0.plus(milliseconds: 1500))
        #expect(harness.session.phase == .hello)
    }

    @Test("DEVICE_INFO is ACKed only after it is stored, then time sync and GET_CONFIG start (§8.2, §9.1)")
    func handshake() throws {
        var harness = SessionHarness()
        harness.connect()
        harness.receive(.deviceInfo(SessionHarness.info), version: 2)
        #expect(harness.session.phase == .established(version: 2))
        #expect(harness.lastAck == nil)
        let batch = try #require(harness.persists.first)
        #expect(batch.items == [.deviceInfo(SessionHarness.info, negotiatedVersion: 2)])
        #expect(harness.sentMessages.contains(.timeSyncRequest))
        #expect(harness.sentMessages.contains(.getConfig))
        #expect(harness.lastSent(.getConfig)?.header.version == 2)
        #expect(harness.reports.contains(.negotiated(version: 2, SessionHarness.info)))
        harness.persistAll()
        #expect(harness.lastAck == Ack(through: SequenceNumber(0)))
    }

    @Test("a hit is persisted once, ACKed after the store, and re-ACKed when repeated (§8.2, §8.3)")
    func hitLifecycle() throws {
        var harness = SessionHarness()
        harness.handshake()
        let bytes = harness.frame(hit(0))
        harness.receive(bytes)
        let batch = try #require(harness.persists.last)
        #expect(batch.hits.map(\.key) == [EventKey(serial: "TT-HARNESS", bootCounter: 7, sequence: 0)])
        #expect(harness.lastAck == Ack(through: SequenceNumber(0)))  // not yet: only DEVICE_INFO
        harness.receive(bytes)  // the device retransmits while the store runs
        #expect(harness.persists.count == 1)
        harness.persistAll()
        #expect(harness.lastAck == Ack(through: SequenceNumber(1)))
        let acksBefore = harness.sentMessages.filter { $0.type == .ack }.count
        harness.receive(bytes)  // our ACK was lost
        #expect(harness.persists.isEmpty)
        #expect(harness.sentMessages.filter { $0.type == .ack }.count == acksBefore + 1)
        #expect(harness.reports.filter { if case .repeatedFrame = $0 { true } else { false } }.count == 2)
    }

    @Test("out-of-order frames are ACKed selectively and cumulatively once the gap fills (§7.3)")
    func selectiveAck() {
        var harness = SessionHarness()
        harness.handshake()
        let first = harness.frame(hit(0))
        let second = harness.frame(hit(1))
        let third = harness.frame(hit(2))
        harness.receive(third)
        harness.receive(second)
        harness.persistAll()
        #expect(harness.lastAck == Ack(through: SequenceNumber(0), selective: 0b110))  // frames 2 and 3: bits 1 and 2
        harness.receive(first)
        harness.persistAll()
        #expect(harness.lastAck == Ack(through: SequenceNumber(3), selective: 0))
    }

    @Test("a store failure NACKs storageFull and ACKs nothing (§8.10)")
    func storageFull() {
        var harness = SessionHarness()
        harness.handshake()
        harness.receive(hit(0))
        let batch = harness.persists.removeLast()
        harness.record(harness.session.persistFailed(batch.id, reason: .storageFull, at: harness.now))
        #expect(harness.nacks.last == Nack(sequence: SequenceNumber(1), reason: .storageFull))
        #expect(harness.lastAck == Ack(through: SequenceNumber(0)))
        // The device retries later with the same frame; this time the store works.
        harness.deviceSequence = 1
        harness.receive(hit(0))
        #expect(harness.persists.count == 1)
        harness.persistAll()
        #expect(harness.lastAck == Ack(through: SequenceNumber(1)))
    }

    @Test("an event already stored is ACKed without storing it again, also across connections (§8.8)")
    func dedupAcrossConnections() {
        var harness = SessionHarness()
        harness.handshake()
        harness.receive(hit(0))
        harness.persistAll()
        harness.record(harness.session.disconnected(at: harness.now))
        harness.handshake()
        harness.receive(hit(0))  // the device never saw our ACK and resends on the new link
        #expect(harness.persists.isEmpty)
        #expect(harness.reports.contains(.duplicate(EventKey(serial: "TT-HARNESS", bootCounter: 7, sequence: 0))))
        #expect(harness.lastAck == Ack(through: SequenceNumber(1)))
    }

    @Test("a store that completes after a disconnect still counts; the resend waits for it, not a second store (§8.8)")
    func storeCompletingAcrossLinks() {
        var harness = SessionHarness()
        harness.handshake()
        harness.receive(hit(0))
        let slow = harness.persists.removeLast()
        harness.record(harness.session.disconnected(at: harness.now))
        harness.handshake()
        harness.receive(hit(0))
        #expect(harness.persists.isEmpty, "no second store for an event whose store is in progress")
        harness.record(harness.session.persisted(slow.id, at: harness.now))
        #expect(harness.lastAck == Ack(through: SequenceNumber(1)))
    }

    @Test("an unknown reliable type is NACKed and released; an unknown unreliable one takes no number (§5.1, §6.6)")
    func unknownTypes() {
        var harness = SessionHarness()
        harness.handshake(version: 2)
        let reliable = FrameEncoder.frame(version: 2, type: 0x13, sequence: SequenceNumber(1), payload: [1])
        harness.deviceSequence = 2
        harness.receive(reliable)
        #expect(harness.nacks.last == Nack(sequence: SequenceNumber(1), reason: .unknownType))
        #expect(harness.lastAck == Ack(through: SequenceNumber(1)))
        let unreliable = FrameEncoder.frame(version: 2, type: 0xB3, sequence: SequenceNumber(2), payload: [])
        harness.receive(unreliable)
        #expect(harness.nacks.last == Nack(sequence: SequenceNumber(2), reason: .unknownType))
        harness.receive(hit(0))  // takes number 2: must still be new
        #expect(harness.persists.count == 1)
    }

    @Test("a frame of another version after the handshake is NACKed unsupportedVersion (§6.5)")
    func wrongVersion() {
        var harness = SessionHarness()
        harness.handshake(version: 2)
        harness.receive(hit(0), version: 1)
        #expect(harness.nacks.last?.reason == .unsupportedVersion)
        #expect(harness.persists.isEmpty)
    }

    @Test("gateway-only types from the device are malformed")
    func wrongDirection() {
        var harness = SessionHarness()
        harness.handshake()
        harness.receive(.setConfig(DeviceConfig(version: 1, settings: DeviceSettings())))
        #expect(harness.nacks.last?.reason == .malformed)
    }

    @Test("frames far ahead of the window are NACKed outOfWindow (§8.6)")
    func outOfWindow() {
        var configuration = LinkSessionConfiguration()
        configuration.window = 4
        var harness = SessionHarness(configuration: configuration)
        harness.handshake()
        harness.deviceSequence = 6
        harness.receive(hit(9))
        #expect(harness.nacks.last == Nack(sequence: SequenceNumber(6), reason: .outOfWindow))
        #expect(harness.persists.isEmpty)
    }

    @Test("reliable frames before the handshake are NACKed busy (§11)")
    func busyBeforeHandshake() {
        var harness = SessionHarness()
        harness.connect()
        harness.deviceSequence = 1
        harness.receive(hit(0))
        #expect(harness.nacks.last == Nack(sequence: SequenceNumber(1), reason: .busy))
        #expect(harness.persists.isEmpty)
    }

    @Test("HELLO is retried with the same number, then the device is given up as unresponsive (§8.7)")
    func unresponsive() {
        var harness = SessionHarness()
        harness.connect()
        harness.fire(.request)
        harness.fire(.request)
        let hellos = harness.sent.filter { $0.header.type == MessageType.hello.rawValue }
        #expect(hellos.count == 3)
        #expect(Set(hellos.map(\.header.sequence)) == [SequenceNumber(0)])
        #expect(hellos.dropFirst().allSatisfy { $0.header.flags.contains(.retransmit) })
        harness.fire(.request)
        #expect(harness.disconnects == [.unresponsive(.hello)])
        #expect(harness.session.phase == .closing)
        #expect(harness.receive(hit(0)).isEmpty)
    }

    @Test("a request waiting behind the device's stream is repeated but not counted; a silent device is given up (§8.7)")
    func busyIsNotUnresponsive() {
        var harness = SessionHarness()
        harness.handshake()
        let getConfigs = { (harness: SessionHarness) in harness.sent.filter { $0.header.type == MessageType.getConfig.rawValue } }
        #expect(getConfigs(harness).count == 1)
        // A store of the device's events is in progress: the device's window waits on us.
        harness.receive(hit(0))
        for _ in 0..<5 {
            harness.advance(milliseconds: 1500)
            harness.fire(.request)
        }
        #expect(harness.disconnects.isEmpty)
        #expect(getConfigs(harness).count == 6)
        #expect(getConfigs(harness).dropFirst().allSatisfy { $0.header.flags.contains(.retransmit) })
        harness.persistAll()
        // The stream moves: a new event each attempt, stored at once.
        for sequence in 1...4 {
            harness.receive(hit(UInt32(sequence)))
            harness.persistAll()
            harness.advance(milliseconds: 1500)
            harness.fire(.request)
        }
        #expect(harness.disconnects.isEmpty)
        // Only retransmissions of what is stored: alive, but no progress. Three counted attempts, then give up.
        harness.deviceSequence = 1
        let repeated = harness.frame(hit(0), flags: .retransmit)
        harness.receive(repeated)
        harness.advance(milliseconds: 1500)
        harness.fire(.request)
        harness.advance(milliseconds: 1500)
        harness.fire(.request)
        #expect(harness.disconnects.isEmpty)
        harness.advance(milliseconds: 1500)
        harness.fire(.request)
        #expect(harness.disconnects == [.unresponsive(.getConfig)])
    }

    @Test("nothing is written after the order to disconnect (found by LinkSessionFuzzer)")
    func noWriteAfterDisconnect() {
        func check(_ actions: [LinkAction], _ label: String) {
            guard let disconnect = actions.firstIndex(where: { if case .disconnect = $0 { true } else { false } }) else {
                Issue.record("\(label): no disconnect")
                return
            }
            #expect(!actions[disconnect...].contains { if case .write = $0 { true } else { false } }, "\(label)")
        }
        var incompatible = SessionHarness()
        incompatible.connect()
        var info = SessionHarness.info
        info.versions = 3...3
        check(incompatible.receive(.deviceInfo(info), version: 3), "incompatible DEVICE_INFO")
        var unresponsive = SessionHarness()
        unresponsive.connect()
        unresponsive.fire(.request)
        unresponsive.fire(.request)
        check(unresponsive.fire(.request), "unresponsive")
    }

    @Test("no common version closes the link (§6.4)")
    func incompatible() {
        var harness = SessionHarness()
        harness.connect()
        harness.receive(.nack(Nack(sequence: SequenceNumber(0), reason: .unsupportedVersion, detail: [3, 4])))
        #expect(harness.disconnects == [.incompatibleVersions(device: 3...4)])
        var other = SessionHarness()
        other.connect()
        var info = SessionHarness.info
        info.versions = 3...3
        other.receive(.deviceInfo(info), version: 3)
        #expect(other.disconnects == [.incompatibleVersions(device: 3...3)])
        #expect(other.nacks.last?.reason == .unsupportedVersion)
    }

    @Test("a time-sync burst makes one anchor from its fastest sample and persists it (§9.1, §9.3)")
    func timeSyncBurst() throws {
        var harness = SessionHarness()
        harness.handshake()
        var roundTrips: [Int64] = [40, 12, 30, 25, 18]
        for index in 0..<5 {
            let request = try #require(harness.lastSent(.timeSyncRequest))
            let roundTrip = roundTrips.removeFirst()
            harness.advance(milliseconds: roundTrip)
            harness.receive(.timeSyncResponse(TimeSyncResponse(requestSequence: request.header.sequence, bootCounter: 7, receiveTicks: UInt32(5000 + index * 200), transmitTicks: UInt32(5000 + index * 200))))
            if index < 4 {
                harness.advance(milliseconds: 100)
                harness.fire(.timeSync)
            }
        }
        let anchors = harness.persists.flatMap(\.items).compactMap { if case .anchor(_, let anchor) = $0 { anchor } else { nil } }
        #expect(anchors.count == 1)
        #expect(anchors.first?.roundTripNanoseconds == 12_000_000)
        #expect(harness.session.clock.hasAnchor(boot: 7))
        #expect(harness.timers[.timeSync] == harness.now.plus(milliseconds: 600_000))
    }

    @Test("an unanswered time-sync request is counted lost and replaced by a new number (§8.7)")
    func timeSyncLost() throws {
        var harness = SessionHarness()
        harness.handshake()
        let first = try #require(harness.lastSent(.timeSyncRequest)).header.sequence
        harness.advance(milliseconds: 1500)
        harness.fire(.timeSync)
        #expect(harness.reports.contains(.timeSyncLost(request: first)))
        let second = try #require(harness.lastSent(.timeSyncRequest)).header.sequence
        #expect(second != first)
        // A late answer to the lost request is ignored: its delay is unknown.
        harness.receive(.timeSyncResponse(TimeSyncResponse(requestSequence: first, bootCounter: 7, receiveTicks: 1, transmitTicks: 1)))
        #expect(!harness.persists.contains { $0.items.contains { if case .anchor = $0 { true } else { false } } })
    }

    @Test("events before their boot's first anchor have no time; events after it do (§9.7)")
    func eventsBeforeAnchor() throws {
        var harness = SessionHarness()
        harness.handshake()
        harness.receive(hit(0, ticks: 100))
        #expect(harness.persists.last?.hits.first?.time == nil)
        for _ in 0..<5 {
            let request = try #require(harness.lastSent(.timeSyncRequest))
            harness.advance(milliseconds: 10)
            harness.receive(.timeSyncResponse(TimeSyncResponse(requestSequence: request.header.sequence, bootCounter: 7, receiveTicks: 2000, transmitTicks: 2000)))
            harness.fire(.timeSync)
        }
        harness.receive(hit(1, ticks: 2500))
        let time = try #require(harness.persists.last?.hits.first?.time)
        #expect(time.uncertaintyNanoseconds < 10_000_000)
    }

    @Test("a hit from a newer boot is a reboot and starts a new burst (§9.6)")
    func rebootFromHit() {
        var harness = SessionHarness()
        harness.handshake()
        let before = harness.sent.filter { $0.header.type == MessageType.timeSyncRequest.rawValue }.count
        harness.receive(hit(0, boot: 8))
        #expect(harness.reports.contains(.rebootDetected(serial: "TT-HARNESS", previousBoot: 7, boot: 8)))
        #expect(harness.sent.filter { $0.header.type == MessageType.timeSyncRequest.rawValue }.count == before + 1)
        harness.receive(hit(1, boot: 7))  // a late event of the old boot is no reboot
        #expect(harness.reports.filter { if case .rebootDetected = $0 { true } else { false } }.count == 1)
    }

    /// Answers the outstanding time-sync request after `roundTrip` ms, as a device of `boot` whose clock reads
    /// `ticks`.
    private func answerTimeSync(_ harness: inout SessionHarness, roundTrip: Int64, boot: UInt16 = 7, ticks: UInt32) throws {
        let request = try #require(harness.lastSent(.timeSyncRequest))
        harness.advance(milliseconds: roundTrip)
        harness.receive(.timeSyncResponse(TimeSyncResponse(requestSequence: request.header.sequence, bootCounter: boot, receiveTicks: ticks, transmitTicks: ticks)))
    }

    private func anchors(_ harness: SessionHarness) -> [TimeAnchor] {
        harness.persists.flatMap(\.items).compactMap { if case .anchor(_, let anchor) = $0 { anchor } else { nil } }
    }

    @Test("a burst cut short by the link's end anchors the boot with its fastest sample so far (§9.3, §9.7)")
    func burstCutShortByDisconnect() throws {
        var harness = SessionHarness()
        harness.handshake()
        try answerTimeSync(&harness, roundTrip: 30, ticks: 5000)
        harness.advance(milliseconds: 100)
        harness.fire(.timeSync)
        try answerTimeSync(&harness, roundTrip: 14, ticks: 5200)
        harness.advance(milliseconds: 100)
        harness.fire(.timeSync)
        // The device powers off with the third request unanswered: the link ends inside the first burst.
        #expect(anchors(harness).isEmpty)
        harness.advance(milliseconds: 50)
        harness.record(harness.session.disconnected(at: harness.now))
        #expect(anchors(harness).map(\.roundTripNanoseconds) == [14_000_000])
        #expect(anchors(harness).allSatisfy { $0.bootCounter == 7 })
        #expect(harness.session.clock.hasAnchor(boot: 7))
        #expect(harness.reports.contains { if case .anchorAdded(_, samples: 2) = $0 { true } else { false } })
        // The next connection's burst starts from nothing: the used samples are not anchored twice.
        harness.persistAll()
        harness.connect()
        harness.receive(.deviceInfo(SessionHarness.info))
        harness.record(harness.session.disconnected(at: harness.now))
        #expect(anchors(harness).isEmpty)  // persistAll took the first anchor's batch: nothing new since
    }

    @Test("a reboot inside a burst anchors the old boot with its samples and measures the new one (§9.3, §9.6)")
    func burstCutShortByReboot() throws {
        var harness = SessionHarness()
        harness.handshake()
        try answerTimeSync(&harness, roundTrip: 22, ticks: 5000)
        harness.advance(milliseconds: 100)
        harness.fire(.timeSync)
        // An event of boot 8 arrives: the device rebooted. The burst restarts for boot 8.
        harness.receive(hit(0, boot: 8, ticks: 40))
        #expect(anchors(harness).map(\.bootCounter) == [7])
        #expect(anchors(harness).first?.roundTripNanoseconds == 22_000_000)
        // A response of boot 8 inside the new burst, then one of boot 9: boot 8 gets its own anchor, never boot 9's.
        try answerTimeSync(&harness, roundTrip: 18, boot: 8, ticks: 300)
        harness.advance(milliseconds: 100)
        harness.fire(.timeSync)
        try answerTimeSync(&harness, roundTrip: 10, boot: 9, ticks: 20)
        #expect(anchors(harness).map(\.bootCounter) == [7, 8])
        #expect(anchors(harness).last?.roundTripNanoseconds == 18_000_000)
        #expect(harness.session.clock.hasAnchor(boot: 7) && harness.session.clock.hasAnchor(boot: 8))
        #expect(!harness.session.clock.hasAnchor(boot: 9))
    }

    @Test("a stalled partial frame is NACKed truncated when the stall timer fires (§3.4)")
    func stallTimer() throws {
        var harness = SessionHarness()
        harness.handshake()
        let bytes = harness.frame(hit(0))
        harness.receive(Array(bytes.prefix(12)))
        #expect(harness.timers[.stall] == harness.now.plus(milliseconds: 500))
        harness.advance(milliseconds: 500)
        harness.fire(.stall)
        #expect(harness.nacks.last == Nack(sequence: SequenceNumber(1), reason: .truncated))
        #expect(harness.timers[.stall] == nil)
    }

    @Test("a link that ends with a partial frame buffered cancels the stall timer with it (§3.4)")
    func stallTimerEndsWithTheLink() throws {
        var harness = SessionHarness()
        harness.handshake()
        harness.receive(Array(harness.frame(hit(0)).prefix(12)))
        #expect(harness.timers[.stall] != nil)
        harness.record(harness.session.disconnected(at: harness.now))
        #expect(harness.timers.isEmpty, "every timer belongs to the link")
    }

    @Test("CONFIG_DATA of another version than the desired one triggers SET_CONFIG; the report confirms it (§7.11)")
    func settingsRoundTrip() throws {
        var harness = SessionHarness()
        harness.handshake()
        let desired = DeviceConfig(version: 4, settings: DeviceSettings(sensitivity: 9))
        harness.record(harness.session.desiredConfigChanged(desired, at: harness.now))
        #expect(!harness.sentMessages.contains(.setConfig(desired)), "waits for the device's report first")
        harness.receive(.configData(DeviceConfig(version: 1, settings: DeviceSettings(sensitivity: 5))))
        #expect(harness.sentMessages.contains(.setConfig(desired)))
        harness.persistAll()
        harness.receive(.configData(DeviceConfig(version: 4, settings: DeviceSettings(sensitivity: 9))))
        #expect(harness.session.reportedConfig?.version == 4)
        #expect(harness.timers[.request] == nil)
    }

    @Test("desired settings out of range are refused with the key and never sent (§7.11)")
    func invalidDesiredSettings() {
        var harness = SessionHarness()
        harness.handshake()
        let bad = DeviceConfig(version: 5, settings: DeviceSettings(ledBrightness: 114))
        harness.record(harness.session.desiredConfigChanged(bad, at: harness.now))
        #expect(harness.session.desiredConfig == nil)
        #expect(harness.reports.contains { if case .desiredConfigRefused(5, let error) = $0 { error.key == DeviceSettings.Key.ledBrightness } else { false } })
        harness.receive(.configData(DeviceConfig(version: 1, settings: DeviceSettings())))
        #expect(!harness.sentMessages.contains { $0.type == .setConfig })
    }

    @Test("a version-1 event sequence is widened across its 16-bit wrap (§8.9)")
    func sequenceWrap() {
        var history = DeviceHistory(serial: "TT-HARNESS")
        history.latestBoot = 7
        history.boots[7] = DeviceHistory.BootHistory()
        history.boots[7]!.highestSequence = 65_534
        var harness = SessionHarness(history: history)
        harness.handshake()
        harness.receive(hit(65_535))
        harness.receive(hit(0))
        harness.receive(hit(1))
        #expect(harness.persists.flatMap(\.hits).map(\.key.sequence) == [65_535, 65_536, 65_537])
    }
}
