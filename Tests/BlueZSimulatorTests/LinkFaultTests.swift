import BlueZSimulator
import DBus
import Glibc
import LinkProtocol
import Testing
import TetherTestSupport

/// The link model and the notification/disconnect faults, seen through AcquireNotify.
@Suite(.serialized)
struct LinkFaultTests {
    /// Connects the first device, acquires TX and RX, sends HELLO and hands `collect` the notify socket.
    static func afterHello<T>(_ harness: SimulatorHarness, _ collect: (Int32) async throws -> T) async throws -> T {
        try await harness.discover()
        try await harness.connect()
        let notify = try await harness.bluez(
            SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "AcquireNotify", [.variantDictionary([:])])
        let write = try await harness.bluez(
            SimulatorHarness.rx, "org.bluez.GattCharacteristic1", "AcquireWrite", [.variantDictionary([:])])
        let notifyFD = try #require(notify.first?.fileDescriptorValue?.rawValue)
        let writeFD = try #require(write.first?.fileDescriptorValue?.rawValue)
        #expect(sendPacket(writeFD, GattNotifyTests.hello))
        // The descriptors close when these values go; keep them until the packets are in.
        let collected = try await collect(notifyFD)
        withExtendedLifetime(notify) {}
        withExtendedLifetime(write) {}
        return collected
    }


    /// The packets after HELLO up to the end of the device's first complete frame. Waits for the frame, not for a
    /// time window, so a loaded machine makes it slower but not wrong; `bound` only stops a broken simulator.
    static func packetsOfFirstFrame(_ harness: SimulatorHarness, bound: Duration = .seconds(60)) async throws -> [[UInt8]] {
        try await afterHello(harness) { notifyFD in
            var packets: [[UInt8]] = []
            let deadline = ContinuousClock.now + bound
            while try GattNotifyTests.decodeFrames(packets).isEmpty, ContinuousClock.now < deadline {
                if let packet = try await receivePacket(notifyFD, milliseconds: 1000) { packets.append(packet) }
            }
            return packets
        }
    }

    @Test func smallMTUCutsNotificationsToTwentyBytes() async throws {
        var configuration = SimulatorConfiguration.generated(count: 1, seed: 3)
        configuration.link.mtu = 23
        try await SimulatorHarness.with(configuration) { harness in
            let packets = try await Self.packetsOfFirstFrame(harness)
            #expect(packets.count > 1)
            #expect(packets.allSatisfy { $0.count <= 20 })
            let frames = try GattNotifyTests.decodeFrames(packets)
            #expect(frames.first?.header.type == 0x02)
            #expect(try await harness.property(SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "MTU") == .uint16(23))
        }
    }

    @Test func duplicatedNotificationsArriveTwice() async throws {
        try await SimulatorHarness.with { harness in
            _ = try await harness.control(
                "InjectFault", [.string("duplicate-notifications"), .variantDictionary(["probability": .double(1)])])
            // Waits until every other packet (one copy of each) makes a complete frame and its twin has arrived,
            // not for a time window, so a loaded machine makes it slower but not wrong.
            let packets = try await Self.afterHello(harness) { notifyFD in
                var packets: [[UInt8]] = []
                let deadline = ContinuousClock.now + .seconds(60)
                func oneCopyEach() -> [[UInt8]] { stride(from: 0, to: packets.count, by: 2).map { packets[$0] } }
                func complete() throws -> Bool {
                    guard packets.count >= 2, packets.count % 2 == 0 else { return false }
                    return try !GattNotifyTests.decodeFrames(oneCopyEach()).isEmpty
                }
                while try !complete(), ContinuousClock.now < deadline {
                    if let packet = try await receivePacket(notifyFD, milliseconds: 1000) { packets.append(packet) }
                }
                return packets
            }
            #expect(packets.count >= 2 && packets.count % 2 == 0)
            #expect(stride(from: 0, to: packets.count - 1, by: 2).allSatisfy { packets[$0] == packets[$0 + 1] })
        }
    }

    @Test func droppedNotificationsNeverArrive() async throws {
        try await SimulatorHarness.with { harness in
            _ = try await harness.control(
                "InjectFault", [.string("drop-notifications"), .variantDictionary(["probability": .double(1)])])
            // The barrier: the device answered HELLO and the fault took the answer. A notification is written to
            // the socket as it is sent, so one that got through would be readable now.
            let statistics = try await Self.afterHello(harness) { notifyFD in
                var statistics: [String: DBusValue] = [:]
                try await waitUntil("the device's answer to HELLO dropped", seconds: 30) {
                    statistics = try await harness.control("GetStatistics", [.objectPath(SimulatorHarness.firstDevice)])
                        .first?.variantDictionaryValue ?? [:]
                    return (statistics["notifications_dropped"]?.uint32Value ?? 0) >= 1
                }
                var poller = pollfd(fd: notifyFD, events: Int16(POLLIN), revents: 0)
                #expect(poll(&poller, 1, 0) == 0, "a notification arrived on the socket")
                return statistics
            }
            #expect(statistics["writes_received"] == .uint32(1))
            #expect(statistics["notifications_sent"] == .uint32(0))
        }
    }

    @Test func randomDisconnectsDropTheLink() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.control(
                "InjectFault", [.string("random-disconnects"), .variantDictionary(["mean_interval_ms": .uint32(50)])])
            try await recorder.waitFor("remote Disconnected") {
                $0.member == "Disconnected" && $0.arguments.first == .string("org.bluez.Reason.Remote")
            }
            #expect(try await harness.property(SimulatorHarness.firstDevice, "org.bluez.Device1", "Connected") == .bool(false))
        }
    }

    @Test func notifySessionsEndWithTheirOwner() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            let other = try await DBusConnection.connect(to: .address(harness.bus.address))
            _ = try await other.call(
                destination: "org.bluez", path: SimulatorHarness.tx, interface: "org.bluez.GattCharacteristic1",
                member: "StartNotify")
            try await recorder.waitFor("Notifying=true") {
                $0.changes("Notifying", to: .bool(true), at: SimulatorHarness.tx)
            }
            await other.close()
            try await recorder.waitFor("Notifying=false after the owner left") {
                $0.changes("Notifying", to: .bool(false), at: SimulatorHarness.tx)
            }
        }
    }
}

/// The link model's rate bound and the firmware's own traffic.
@Suite(.serialized)
struct LinkModelTests {
    @Test func oneNotificationPerConnectionEvent() async throws {
        var configuration = SimulatorConfiguration.generated(count: 1, seed: 3)
        configuration.link.mtu = 23
        configuration.link.notificationsPerEvent = 1
        configuration.link.connectionIntervalMilliseconds = 100
        try await SimulatorHarness.with(configuration) { harness in
            try await harness.discover()
            try await harness.connect()
            let notify = try await harness.bluez(
                SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "AcquireNotify", [.variantDictionary([:])])
            let notifyFD = try #require(notify.first?.fileDescriptorValue?.rawValue)
            let written = ContinuousClock.now
            _ = try await harness.bluez(
                SimulatorHarness.rx, "org.bluez.GattCharacteristic1", "WriteValue",
                [.bytes(GattNotifyTests.hello), .variantDictionary(["type": .string("command")])])
            var arrivals: [ContinuousClock.Instant] = []
            var packets: [[UInt8]] = []
            while try GattNotifyTests.decodeFrames(packets).isEmpty,
                let packet = try await receivePacket(notifyFD, milliseconds: 15000)
            {
                packets.append(packet)
                arrivals.append(.now)
            }
            #expect(packets.count >= 2)
            // One notification per 100 ms event: the k-th cannot arrive sooner than k intervals after the write.
            // A slow reader only makes arrivals later, so this bound holds on a loaded machine too (spacing between
            // arrivals would not: a late read sees queued packets back to back).
            for (index, arrival) in arrivals.enumerated() {
                #expect(arrival - written >= .milliseconds(90 * index), "packet \(index) after \(arrival - written)")
            }
        }
    }

    @Test func recordedHitsReachTheGatewayAsHitEvents() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            try await harness.connect()
            let notify = try await harness.bluez(
                SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "AcquireNotify", [.variantDictionary([:])])
            let notifyFD = try #require(notify.first?.fileDescriptorValue?.rawValue)
            _ = try await harness.bluez(
                SimulatorHarness.rx, "org.bluez.GattCharacteristic1", "WriteValue",
                [.bytes(GattNotifyTests.hello), .variantDictionary(["type": .string("command")])])
            let recorded = try await harness.control(
                "RecordHits", [.objectPath(SimulatorHarness.firstDevice), .uint32(2)])
            #expect(recorded == [.uint32(2)])
            var packets: [[UInt8]] = []
            var types: [UInt8] = []
            while types.filter({ $0 == 0x10 }).count < 2, let packet = try await receivePacket(notifyFD) {
                packets.append(packet)
                types = try GattNotifyTests.decodeFrames(packets).map(\.header.type)
            }
            #expect(types.first == 0x02)  // DEVICE_INFO first
            #expect(types.filter { $0 == 0x10 }.count >= 2)  // then HIT_EVENTs
        }
    }

    @Test func everyStartNotifySessionGetsItsOwnValueSignal() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            let other = try await DBusConnection.connect(to: .address(harness.bus.address))
            for connection in [harness.client, other] {
                _ = try await connection.call(
                    destination: "org.bluez", path: SimulatorHarness.tx, interface: "org.bluez.GattCharacteristic1",
                    member: "StartNotify")
            }
            _ = try await harness.bluez(
                SimulatorHarness.rx, "org.bluez.GattCharacteristic1", "WriteValue",
                [.bytes(GattNotifyTests.hello), .variantDictionary(["type": .string("command")])])
            var values: [[UInt8]] = []
            try await waitUntil("DEVICE_INFO twice over", seconds: 30) {
                values = recorder.signals.filter { $0.path == SimulatorHarness.tx }.compactMap {
                    $0.changedProperties?["Value"]?.bytesValue
                }
                let unique = stride(from: 0, to: values.count, by: 2).map { values[$0] }
                let frames = try GattNotifyTests.decodeFrames(unique)
                return values.count % 2 == 0 && !frames.isEmpty
            }
            #expect(stride(from: 0, to: values.count - 1, by: 2).allSatisfy { values[$0] == values[$0 + 1] })
            await other.close()
        }
    }
}
