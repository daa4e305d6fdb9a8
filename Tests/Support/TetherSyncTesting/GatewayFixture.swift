import Foundation
import LinkProtocol
import TetherStore
import TetherPrimitives

/// A gateway database in a temporary directory, filled through the store's real write path
/// (`ConsumptionService`), so its outbox holds exactly what a gateway in the field would push.
public final class GatewayFixture: Sendable {
    public let directory: String
    public let path: String
    public let database: GatewayDatabase

    /// 2026-11-01T08:00:00Z.
    public static let start = Timestamp(nanoseconds: (1_793_491_200 + 8 * 3600) * 1_000_000_000)

    public init(synchronous: GatewayDatabase.Configuration.Synchronous = .full, name: String = "gateway") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-sync-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/\(name).sqlite"
        var configuration = GatewayDatabase.Configuration()
        configuration.synchronous = synchronous
        database = try GatewayDatabase(path: path, configuration: configuration)
    }

    /// Opens the same file again (a restarted gateway).
    public func reopen() throws -> GatewayDatabase {
        try GatewayDatabase(path: path, configuration: database.configuration)
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stores `count` consumption events spread over `devices` devices (`TH-0000`…), each device introduced by its
    /// DEVICE_INFO first, `perBatch` events per store transaction. Returns the serials.
    @discardableResult
    public func storeEvents(_ count: Int, devices: Int = 4, perBatch: Int = 1000, seed: UInt64 = 7, serialPrefix: String = "TH-") throws -> [String] {
        let service = ConsumptionService(database: database)
        var random = SplitMix64(seed: seed)
        let serials = (0..<max(1, devices)).map { serialPrefix + String(format: "%04d", $0) }
        var batchID: PersistBatch.ID = 1
        var existing: [String: Int64] = [:]
        for serial in serials {
            existing[serial] = Int64(try service.eventCount(serial: serial))
            if existing[serial] == 0 {
                _ = try service.apply(PersistBatch(id: batchID, items: [.deviceInfo(Self.info(serial), negotiatedVersion: 1)]), at: Self.start, using: &random)
                batchID += 1
            }
        }
        var stored = 0
        while stored < count {
            let size = min(perBatch, count - stored)
            var items: [PersistItem] = []
            items.reserveCapacity(size)
            for offset in 0..<size {
                let index = stored + offset
                let serial = serials[index % serials.count]
                let sequence = existing[serial, default: 0]
                existing[serial] = sequence + 1
                let at = Self.start.advanced(by: .milliseconds(Int64(index)))
                items.append(.hit(StoredHit(
                    key: EventKey(serial: serial, bootCounter: 1, sequence: sequence), ticks: 1000 * (sequence + 1), durationMilliseconds: 800,
                    intensity: UInt8(index % 101), receivedAt: at, time: nil)))
            }
            _ = try service.apply(PersistBatch(id: batchID, items: items), at: Self.start.advanced(by: .milliseconds(Int64(stored + size))), using: &random)
            batchID += 1
            stored += size
        }
        return serials
    }

    public static func info(_ serial: String) -> DeviceInfo {
        DeviceInfo(
            hardwareRevision: 3, firmware: FirmwareVersion(major: 1, minor: 4, patch: 2), bootCounter: 1, capabilities: [.battery, .sleep], versions: 1...2,
            serial: serial)
    }
}
