import Foundation
import LinkProtocol
import SyncContract
import TetherStore
import TetherPrimitives

/// What the gateway knows of the server's versions, kept in the store's `syncCursor` table next to the feed
/// cursor:
///
/// - `registry:<serial>`: the latest device version the feed delivered, and whether it was a deletion. It makes
///   re-applying a page idempotent and lets the integrity gate recognise a change for a device the feed never
///   introduced (a dangling reference).
/// - `settings:<serial>`: the server's settings version the gateway last took, with the desired settings at that
///   version: the `base_version` of the gateway's pushes and the base of the three-way merge when a push conflicts.
public struct ServerVersions: Sendable {
    public let cursors: SyncCursors

    public init(cursors: SyncCursors) { self.cursors = cursors }

    public struct DeviceVersion: Codable, Hashable, Sendable {
        public var version: Int64
        public var deleted: Bool
    }

    public struct SettingsVersion: Codable, Hashable, Sendable {
        public var version: Int64
        public var desired: SettingsDocument?
    }

    public func device(_ serial: String) throws(StoreError) -> DeviceVersion? {
        try read(DeviceVersion.self, "registry:" + serial)
    }

    public func setDevice(_ serial: String, _ value: DeviceVersion, at now: Timestamp) throws(StoreError) {
        try write(value, "registry:" + serial, at: now)
    }

    public func settings(_ serial: String) throws(StoreError) -> SettingsVersion? {
        try read(SettingsVersion.self, "settings:" + serial)
    }

    public func setSettings(_ serial: String, _ value: SettingsVersion, at now: Timestamp) throws(StoreError) {
        try write(value, "settings:" + serial, at: now)
    }

    private func read<T: Decodable>(_ type: T.Type, _ name: String) throws(StoreError) -> T? {
        guard let text = try cursors.value(name) else { return nil }
        do {
            return try JSONDecoder().decode(T.self, from: Data(text.utf8))
        } catch {
            throw StoreError(.corrupt, "sync cursor \(name) holds \(text)")
        }
    }

    private func write(_ value: some Encodable, _ name: String, at now: Timestamp) throws(StoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let text: String
        do {
            text = String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw StoreError(.other, "encoding sync cursor \(name): \(error)")
        }
        try cursors.set(name, to: text, at: now)
    }
}
