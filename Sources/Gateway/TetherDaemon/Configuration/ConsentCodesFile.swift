import Foundation
import HealthProfiles

/// `[health] consent_codes_file`: the consent codes of the users of multi-user devices (a family's scale with the
/// User Data Service), with which the gateway consents to each user on every connection (docs/design/health.md,
/// "Multi-user scales: User Data Service consent").
///
/// One user a line: the device's address, the user index (0…254; 255 is "unknown user", UDS v1.0 §3.3) and the
/// consent code (0…9999, UDS v1.0 §3.4), separated by spaces or tabs. `#` starts a comment; blank lines are skipped.
///
///     # the bathroom scale
///     C0:54:45:00:00:05 1 4321
///     C0:54:45:00:00:05 2 0007
///
/// A secrets file: its mode must allow neither group nor others (0600, `SecretFileCheck`), and no message here
/// shows a line's text or a code: a refusal names the file, the line and the field.
public struct ConsentCodes: Hashable, Sendable {
    /// By address in upper case (BlueZ's form, `C0:54:45:00:00:05`), each device's users in index order.
    public private(set) var byAddress: [String: [UserConsentProcedure.Credential]] = [:]

    public init() {}

    public var isEmpty: Bool { byAddress.isEmpty }

    /// How many users, over all devices (the only figure tetherd logs about the file).
    public var userCount: Int { byAddress.values.reduce(0) { $0 + $1.count } }

    /// A malformed line: which one and what is wrong, never its text.
    public struct LineError: Error, Hashable, Sendable, CustomStringConvertible {
        public var path: String
        public var line: Int
        public var message: String

        public var description: String { "\(path): line \(line): \(message)" }
    }

    public static func parse(_ text: String, path: String) throws(LineError) -> ConsentCodes {
        var codes = ConsentCodes()
        var firstLine: [String: Int] = [:]
        for (offset, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = offset + 1
            func refuse(_ message: String) -> LineError { LineError(path: path, line: number, message: message) }
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = content.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.isEmpty { continue }
            guard fields.count == 3 else {
                throw refuse("expected ADDRESS USER-INDEX CODE (three fields), got \(fields.count) fields")
            }
            guard let address = ConfigurationValues.deviceAddress(String(fields[0])) else {
                throw refuse("the address is not six hexadecimal pairs separated by colons (e.g. C0:54:45:00:00:05)")
            }
            guard fields[1].allSatisfy(\.isASCIIDigit), let index = UInt8(fields[1]), index != UserIndex.unknownUser else {
                throw refuse("the user index must be a number from 0 to 254")
            }
            guard fields[2].count <= 4, fields[2].allSatisfy(\.isASCIIDigit), let value = UInt16(fields[2]),
                let code = ConsentCode(value)
            else { throw refuse("the consent code must be a number from 0 to 9999") }
            let key = "\(address) \(index)"
            if let earlier = firstLine[key] {
                throw refuse("user \(index) of \(address) is already given on line \(earlier)")
            }
            firstLine[key] = number
            codes.byAddress[address, default: []].append(UserConsentProcedure.Credential(userIndex: index, code: code))
        }
        for address in codes.byAddress.keys { codes.byAddress[address]?.sort { $0.userIndex < $1.userIndex } }
        return codes
    }

    /// Checks the file's mode (`SecretFileCheck`), then reads and parses it. The error text is safe to show.
    public static func load(path: String) throws(LoadError) -> ConsentCodes {
        if let problem = SecretFileCheck.problem(at: path, holding: "consent codes") { throw LoadError(description: problem) }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw LoadError(description: "cannot read \(path) (\(ConfigurationReader.reason(error)))")
        }
        do {
            return try parse(text, path: path)
        } catch {
            throw LoadError(description: error.description)
        }
    }

    public struct LoadError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
