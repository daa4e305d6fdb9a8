import BlueZ
import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import HealthDeviceModel
import HealthProfiles
import Synchronization
import Testing
@testable import TetherGateway
import TetherPrimitives
import TetherStore
import TetherTestSupport

/// A family's scale (Weight Scale Service with the User Data Service) through a real gateway and its store: the
/// scale sends a user's stored weights only after that user's Consent on the connection (UDS v1.0 §3.4), so the
/// gateway consents to each user it holds a code for, and each weight is stored with its user's index. Expected
/// values come from the simulator's configured readings (a second model built with the same settings), decoded here
/// by hand from the bytes, never by the gateway's parser.
@Suite("Multi-user scales: User Data Service consent through a real gateway")
struct HealthUserConsentTests {
    static let address = GatewayHarness.address(1)
    static let weightMeasurement = "00002a9d-0000-1000-8000-00805f9b34fb"

    /// Two users (index 1, code 4321; index 2, code 1111), four stored weights, taken in turn by user 1 and user 2.
    static func scale() -> HealthDeviceSettings {
        var scale = HealthDeviceSettings(kind: .weightScale)
        scale.seed = 11
        scale.storedRecords = 4
        scale.users = [HealthUser(index: 1, consentCode: 4321), HealthUser(index: 2, consentCode: 1111)]
        return scale
    }

    static func credential(_ index: UInt8, _ code: UInt16) -> UserConsentProcedure.Credential {
        UserConsentProcedure.Credential(userIndex: index, code: ConsentCode(code)!)
    }

    /// Weight Measurement by hand (WSS v1.0 §3.2: flags; weight uint16 LE in 0.005 kg steps when flags bit 0 is 0;
    /// the 7-byte Date Time when bit 1; the User ID uint8 when bit 2): the weight in grams and the user.
    static func weight(_ bytes: [UInt8]) throws -> (grams: Int64, user: UInt8?) {
        try #require(bytes.count >= 3 && bytes[0] & 0x01 == 0, "SI units: \(bytes)")
        let steps = Int64(bytes[1]) | Int64(bytes[2]) << 8
        let userOffset = 3 + (bytes[0] & 0x02 != 0 ? 7 : 0)
        let user: UInt8? = bytes[0] & 0x04 != 0 ? bytes[userOffset] : nil
        return (steps * 5, user)
    }

    static func simulator() -> SimulatorConfiguration {
        var simulator = GatewayHarness.configuration(devices: 1)
        simulator.devices[0].health = scale()
        return simulator
    }

    /// The weights the simulator's scale holds at power-on, by user: the same settings in a second model (its
    /// readings depend on the seed, not on the time; tether-sim seeds device N's model with the settings' seed XOR
    /// the simulator's seed + N × 7919), read off the bytes by hand.
    static func configuredWeights() throws -> [UInt8: [Int64]] {
        var settings = scale()
        settings.seed ^= simulator().seed &+ 0 &* 7919
        let model = HealthDevice(settings: settings, now: Timestamp(nanoseconds: 1_800_000_000_000_000_000))
        var byUser: [UInt8: [Int64]] = [:]
        for record in model.store.records {
            for transmission in record.transmissions where transmission.characteristic == 0x2A9D {
                let (grams, user) = try weight(transmission.value)
                byUser[try #require(user), default: []].append(grams)
            }
        }
        return byUser.mapValues { $0.sorted() }
    }

    /// A stored value as grams (reported in kilograms).
    static func grams(_ value: HealthDecimal) -> Int64? {
        let shift = Int(value.exponent) + 3
        if shift >= 0 { return value.mantissa * Int64(pow(10, Double(shift))) }
        let divisor = Int64(pow(10, Double(-shift)))
        return value.mantissa % divisor == 0 ? value.mantissa / divisor : nil
    }

    /// The body-mass samples stored, as (user index, grams), and each one's raw bytes decoded by hand.
    static func storedWeights(_ storage: GatewayStorage) throws -> [(user: Int?, grams: Int64?, raw: [UInt8])] {
        try HealthStore(database: storage.database).samples().map(\.sample)
            .filter { $0.metricCode == 188_736 && $0.characteristic == weightMeasurement }
            .map { ($0.userIndex, $0.value.reported.flatMap(grams), $0.rawBytes ?? []) }
    }

    static func consents(_ trace: TraceRecorder) -> [UInt8: UserConsentProcedure.Outcome] {
        var outcomes: [UInt8: UserConsentProcedure.Outcome] = [:]
        for event in trace.all {
            if case .userConsent(let address, let user, let outcome) = event, address == Self.address { outcomes[user] = outcome }
        }
        return outcomes
    }

    static func run(
        consents: [UserConsentProcedure.Credential]?, _ body: (GatewayHarness, SimulatedDevice) async throws -> Void
    ) async throws {
        var configuration = GatewayHarness.gatewayConfiguration()
        if let consents { configuration.healthUserConsents = [address: consents] }
        try await GatewayHarness.with(simulator: simulator(), gateway: configuration, health: { storage in
            HealthHotLane(database: storage.database, committer: storage.committer)
        }) { harness in
            _ = try await harness.gateway.pair(address: address, delegate: RejectingDelegate())
            let device = try #require(await harness.simulated.simulator.device(at: SimulatedBlueZ.devicePath(address)))
            try await body(harness, device)
        }
    }

    /// With both codes, both users' stored weights arrive and are stored once each with user index 1 and 2, the
    /// values the scale was configured with. The Consents on the wire, by hand (UDS v1.0 §3.4): 02 01 E1 10 (user 1,
    /// 4321 = 0x10E1), then 02 02 57 04 (user 2, 1111 = 0x0457).
    @Test(.timeLimit(.minutes(2)))
    func withCodesForBothUsersEachUsersWeightsAreStoredWithTheirIndex() async throws {
        let expected = try Self.configuredWeights()
        #expect(expected.keys.sorted() == [1, 2] && expected.values.allSatisfy { $0.count == 2 }, "\(expected)")
        try await Self.run(consents: [Self.credential(1, 4321), Self.credential(2, 1111)]) { harness, device in
            try await waitUntil("four weights stored") { ((try? Self.storedWeights(harness.storage)) ?? []).count >= 4 }
            try await waitUntil("both users' consent traced") { Self.consents(harness.trace).count == 2 }
            #expect(Self.consents(harness.trace) == [1: .consented, 2: .consented])

            let stored = try Self.storedWeights(harness.storage)
            #expect(stored.count == 4, "\(stored)")
            for user in [1, 2] {
                let mine = stored.filter { $0.user == user }
                #expect(mine.compactMap(\.grams).sorted() == expected[UInt8(user)], "user \(user): \(mine)")
                // The sample's user index is the User ID in its own bytes.
                #expect(try mine.allSatisfy { try Self.weight($0.raw).user == UInt8(user) })
            }
            let consentWrites = await device.healthWrites.filter { $0.characteristic == 0x2A9F }.map(\.bytes)
            #expect(consentWrites == [[0x02, 0x01, 0xE1, 0x10], [0x02, 0x02, 0x57, 0x04]])
        }
    }

    /// A wrong code for user 2: the scale answers User Not Authorized, only user 1's weights arrive, and the gateway
    /// reports user 2 not authorized (tetherd logs it).
    @Test(.timeLimit(.minutes(2)))
    func aWrongCodeForUser2StoresOnlyUser1sWeights() async throws {
        let expected = try Self.configuredWeights()
        try await Self.run(consents: [Self.credential(1, 4321), Self.credential(2, 1112)]) { harness, _ in
            try await waitUntil("both users' consent traced") { Self.consents(harness.trace).count == 2 }
            #expect(Self.consents(harness.trace) == [1: .consented, 2: .notAuthorized])
            try await waitUntil("user 1's two weights stored") { ((try? Self.storedWeights(harness.storage)) ?? []).count >= 2 }
            try await Task.sleep(for: .seconds(1))  // what user 2's weights would need to arrive
            let stored = try Self.storedWeights(harness.storage)
            #expect(stored.count == 2, "\(stored)")
            #expect(stored.allSatisfy { $0.user == 1 })
            #expect(stored.compactMap(\.grams).sorted() == expected[1])
        }
    }

    /// Without codes, nothing is written to the User Control Point (nor its indications subscribed), and the scale
    /// sends none of its users' weights.
    @Test(.timeLimit(.minutes(2)))
    func withoutCodesNoConsentIsWritten() async throws {
        try await Self.run(consents: nil) { harness, device in
            try await waitUntil("the weight measurement subscribed") { await device.isHealthSubscribed(0x2A9D) }
            try await Task.sleep(for: .seconds(1))
            #expect(await device.healthWrites.filter { $0.characteristic == 0x2A9F }.isEmpty)
            #expect(await !device.isHealthSubscribed(0x2A9F))
            #expect(Self.consents(harness.trace).isEmpty)
            #expect(try Self.storedWeights(harness.storage).isEmpty)
        }
    }
}
