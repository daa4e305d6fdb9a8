import Foundation
import SyncContract

/// JSON columns (settings documents, conflicts, feed entries), encoded and decoded the same way by both stores.
enum StoredJSON {
    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String, column: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(text.utf8))
        } catch {
            throw StorageCorruption(description: "column \(column) does not hold a valid \(T.self): \(DecodingErrorText.describe(error))")
        }
    }

    static func decodeIfPresent<T: Decodable>(_ type: T.Type, _ text: String?, column: String) throws -> T? {
        guard let text else { return nil }
        return try decode(type, text, column: column)
    }
}
