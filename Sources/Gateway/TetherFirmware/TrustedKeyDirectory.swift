import Foundation
import MCUbootImage

/// The trusted-key directory (`tether firmware --keys DIR`, tetherd's `[firmware] trusted_keys`), read at the edge:
/// the image verifier only sees the keys' bytes.
public enum TrustedKeyDirectory {
    public static let defaultPath = "/etc/tether/firmware-keys"

    public struct LoadError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Every regular file in `path` (hidden files skipped), in name order, as one trusted key each.
    public static func load(_ path: String) throws -> TrustedKeys {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw LoadError(description: "trusted-key directory \(path) does not exist or is not a directory")
        }
        let names: [String]
        do {
            names = try manager.contentsOfDirectory(atPath: path).filter { !$0.hasPrefix(".") }.sorted()
        } catch {
            throw LoadError(description: "cannot list \(path): \(error.localizedDescription)")
        }
        var keys: [TrustedKey] = []
        for name in names {
            let file = (path as NSString).appendingPathComponent(name)
            guard manager.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            guard let data = manager.contents(atPath: file) else {
                throw LoadError(description: "cannot read \(file)")
            }
            do {
                keys.append(try TrustedKey(name: name, contents: Array(data)))
            } catch {
                throw LoadError(description: "\(file) is \(error)")
            }
        }
        guard !keys.isEmpty else { throw LoadError(description: "trusted-key directory \(path) holds no keys") }
        return TrustedKeys(keys)
    }
}
