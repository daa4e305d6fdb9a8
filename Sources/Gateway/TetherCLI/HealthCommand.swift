import ArgumentParser
import Foundation
import HealthProfiles

/// `tether health`: the standard Bluetooth health profiles: `decode` offline, and what tetherd's health lanes hold and
/// see (`devices`, `samples`, `watch`, `backfill`, in HealthDaemonCommands.swift).
public struct HealthCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Standard Bluetooth health devices (blood pressure, glucose, CGM, scales, thermometers, oximeters, heart rate).",
        subcommands: [Devices.self, Samples.self, Delete.self, Correct.self, Deletions.self, Projections.self, Watch.self, Backfill.self, Decode.self]
    )

    public init() {}

    /// `tether health decode --characteristic UUID HEX...`: decodes a characteristic value exactly as the gateway
    /// does (HealthProfiles' `HealthDecoder`), without tetherd.
    public struct Decode: ParsableCommand {
        public static let configuration = CommandConfiguration(
            commandName: "decode",
            abstract: "Decode a health characteristic value offline, exactly as the gateway does.",
            discussion: """
                Prints every decoded field in the specification's units and the samples the gateway would store. \
                Bytes the decoder refuses exit 1 with the reason (the field and its offset); with --json they \
                print {"valid": false, "reason": ...}. CGM values are checked against their E2E-CRC when a record \
                has exactly two bytes after its fields.

                Characteristics: 2A37 heart rate, 2A35 blood pressure, 2A36 intermediate cuff pressure, 2A1C \
                temperature, 2A1E intermediate temperature, 2A9D weight, 2A9C body composition, 2A5E PLX \
                spot-check, 2A5F PLX continuous, 2A18 glucose, 2A34 glucose context, 2AA7 CGM; 'sfloat' or \
                'float' for a bare 2- or 4-byte IEEE 11073 number.
                """
        )

        @Option(help: ArgumentHelp("The characteristic: 2A35, 0x2A35 or the full 128-bit UUID; 'sfloat' or 'float' for a bare number.", valueName: "uuid"))
        var characteristic: String

        @Argument(help: ArgumentHelp("The value as hex, in one or more pieces; spaces and colons are allowed.", valueName: "hex"))
        var hex: [String] = []

        @Flag(help: "Print JSON: the decoded fields, the samples, and {\"valid\": false, \"reason\": ...} for refused bytes.")
        var json = false

        public init() {}

        public func validate() throws {
            _ = try target()
            guard !hex.isEmpty else { throw ValidationError("Give the value as hex.") }
            _ = try bytes()
        }

        public func run() throws {
            let report = HealthDecodeReport.make(target: try target(), bytes: try bytes())
            if json {
                Output.line(try report.json())
            } else {
                Output.line(report.text())
            }
            if !report.valid { throw TetherExitCode.checkFailed }
        }

        func target() throws -> HealthDecodeTarget {
            guard let target = HealthDecodeTarget(characteristic) else {
                throw ValidationError("'\(characteristic)' is not a health characteristic this decoder knows (2A35, 0x2A35, the full UUID, sfloat or float).")
            }
            return target
        }

        func bytes() throws -> [UInt8] {
            guard let bytes = HealthDecodeTarget.parseHex(hex) else {
                throw ValidationError("'\(hex.joined(separator: " "))' is not hex: use pairs of hex digits, optionally separated by spaces or colons.")
            }
            return bytes
        }
    }
}

/// What `decode` decodes: a characteristic, or a bare SFLOAT/FLOAT.
enum HealthDecodeTarget: Equatable {
    case characteristic(HealthCharacteristic)
    case sfloat
    case float

    init?(_ text: String) {
        switch text.lowercased() {
        case "sfloat": self = .sfloat
        case "float": self = .float
        default:
            guard let characteristic = HealthCharacteristic(uuidString: text) else { return nil }
            self = .characteristic(characteristic)
        }
    }

    /// Hex pieces joined; spaces and colons are separators, a `0x` prefix per piece is allowed. Nil for anything
    /// else or an odd number of digits.
    static func parseHex(_ pieces: [String]) -> [UInt8]? {
        var digits: [UInt8] = []
        for piece in pieces {
            var text = Substring(piece)
            if text.lowercased().hasPrefix("0x") { text = text.dropFirst(2) }
            for character in text where character != " " && character != ":" {
                guard let value = character.hexDigitValue, character.isASCII else { return nil }
                digits.append(UInt8(value))
            }
        }
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }
}
