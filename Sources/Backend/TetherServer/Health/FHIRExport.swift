import Crypto
import Foundation
import SyncContract
import TetherPrimitives

/// Stored health samples as an HL7 FHIR R4 transaction Bundle (hl7.org/fhir/R4/bundle.html, §2.36.4 transactions):
/// a pure function of the rows, so that the endpoint, the command and the tests share one mapping.
///
/// - One `Observation` per undeleted sample. Deleted samples (a tombstone names them) are left out: a receiver that
///   never had them gets nothing to undo, and one that did cannot be told through a conditional create anyway (that
///   needs an update or a delete request, not done here). A correction (a sample that `replaces` another) is
///   `amended` (R4 ObservationStatus: "subsequent to being final, the observation has been modified") with a note
///   naming the replaced sample's identifier; every other sample is `final`.
/// - `code.coding`: the MDC code (system urn:iso:std:iso:11073:10101) and the LOINC codes `FHIRVocabulary` gives;
///   category `vital-signs` where the FHIR R4 vital-signs profile names the measurement.
/// - `valueQuantity` carries the canonical value's numeral exactly as stored (FHIR R4 §2.24.0.1 decimal; never a
///   Double), UCUM system and code. A sample that is not a number has `dataAbsentReason` instead (R4 data-absent-
///   reason: NaN `not-a-number`, ±INF `positive-infinity`/`negative-infinity`, NRes and reserved `error`).
/// - `effectiveDateTime` in UTC, cut (toward the past) to milliseconds.
/// - `identifier` `urn:tether:health-sample`|uid, and the entry's request is a conditional create on it
///   (`POST Observation`, `ifNoneExist: identifier=…`), so that exporting the same samples twice stores them once.
/// - The device is a `Device` entry (conditional create on `urn:tether:health-device`|the gateway's peripheral uid,
///   a UUIDv7) with manufacturer, model and serial when known; the gateway that uploaded the sample is a `Device`
///   too (`urn:tether:gateway`|its id), named by the R4 core extension observation-gatewayDevice, as the PHD IG does:
///   `Observation.performer` cannot reference a Device in R4.
/// - `fullUrl`s are `urn:uuid:`: the sample's uid for an Observation, a UUIDv5 (RFC 9562 §5.5) of the identifier for
///   a Device, so that the same rows always give the same bundle.
/// - No `subject`: which patient a device's readings belong to is not known to Tether.
public enum FHIRExport {
    public static let sampleIdentifierSystem = "urn:tether:health-sample"
    public static let deviceIdentifierSystem = "urn:tether:health-device"
    public static let gatewayIdentifierSystem = "urn:tether:gateway"
    /// FHIR R4 core extension (hl7.org/fhir/R4/extension-observation-gatewaydevice.html).
    public static let gatewayDeviceExtension = "http://hl7.org/fhir/StructureDefinition/observation-gatewayDevice"
    public static let mediaType = "application/fhir+json"

    /// The bundle for `rows` (deleted ones are skipped), in their order; Devices first, in order of first use.
    /// `next`, when given, becomes the bundle's `link` with relation `next`.
    public static func bundle(_ rows: [HealthSampleRow], next: String? = nil) -> FHIRJSON {
        var deviceEntries: [FHIRJSON] = []
        var deviceURLs: [String: String] = [:]
        func deviceReference(system: String, value: String, resource: () -> FHIRJSON) -> String {
            let key = system + "|" + value
            if let url = deviceURLs[key] { return url }
            let url = "urn:uuid:" + nameBasedUUID(key)
            deviceURLs[key] = url
            deviceEntries.append(entry(fullUrl: url, resource: resource(), type: "Device", system: system, value: value))
            return url
        }
        var observationEntries: [FHIRJSON] = []
        for row in rows where row.deletedAt == nil {
            let device = row.sample.device
            let deviceURL = deviceReference(system: deviceIdentifierSystem, value: device.uid) { deviceResource(device) }
            let gatewayURL = deviceReference(system: gatewayIdentifierSystem, value: row.gateway) {
                .object([("resourceType", .string("Device")), ("identifier", identifiers(gatewayIdentifierSystem, row.gateway))])
            }
            let sample = row.sample
            observationEntries.append(
                entry(
                    fullUrl: "urn:uuid:" + sample.uid.lowercased(),
                    resource: observation(sample, deviceURL: deviceURL, gatewayURL: gatewayURL),
                    type: "Observation", system: sampleIdentifierSystem, value: sample.uid.lowercased()))
        }
        var members: [(String, FHIRJSON)] = [("resourceType", .string("Bundle")), ("type", .string("transaction"))]
        if let next { members.append(("link", .array([.object([("relation", .string("next")), ("url", .string(next))])]))) }
        members.append(("entry", .array(deviceEntries + observationEntries)))
        return .object(members)
    }

    static func observation(_ sample: HealthSampleUpload, deviceURL: String, gatewayURL: String) -> FHIRJSON {
        let vocabulary = FHIRVocabulary.entry(sample.metricCode)
        var members: [(String, FHIRJSON)] = [
            ("resourceType", .string("Observation")),
            (
                "extension",
                .array([.object([("url", .string(gatewayDeviceExtension)), ("valueReference", .object([("reference", .string(gatewayURL))]))])])
            ),
            ("identifier", identifiers(sampleIdentifierSystem, sample.uid.lowercased())),
            ("status", .string(sample.replaces == nil ? "final" : "amended")),
        ]
        if vocabulary?.vitalSign == true {
            members.append(("category", .array([codeable(FHIRVocabulary.categorySystem, "vital-signs", "Vital Signs")])))
        }
        var coding: [FHIRJSON] = [Self.coding(FHIRVocabulary.mdcSystem, String(sample.metricCode), vocabulary?.referenceID)]
        coding += (vocabulary?.loinc ?? []).map { Self.coding(FHIRVocabulary.loincSystem, $0.code, $0.display) }
        members.append(("code", .object([("coding", .array(coding))])))
        if let effective = dateTime(nanoseconds: sample.effectiveAt) { members.append(("effectiveDateTime", .string(effective))) }
        switch value(sample) {
        case .quantity(let number):
            members.append(
                (
                    "valueQuantity",
                    .object([
                        ("value", number), ("unit", .string(sample.canonical.unit)), ("system", .string(FHIRVocabulary.ucumSystem)),
                        ("code", .string(sample.canonical.unit)),
                    ])
                ))
        case .absent(let reason):
            members.append(("dataAbsentReason", codeable(FHIRVocabulary.dataAbsentReasonSystem, reason, nil)))
        }
        if let replaces = sample.replaces {
            members.append(("note", .array([.object([("text", .string("Replaces \(sampleIdentifierSystem)|\(replaces.lowercased())"))])])))
        }
        members.append(("device", .object([("reference", .string(deviceURL))])))
        return .object(members)
    }

    enum Value: Equatable {
        case quantity(FHIRJSON)
        /// An R4 data-absent-reason code.
        case absent(String)
    }

    /// The sample's value: its canonical numeral, or why there is none (IEEE 11073-20601 Annex F.8's special values
    /// mapped to the R4 data-absent-reason codes). A stored numeral that is not a FHIR decimal (the upload's checks
    /// make that impossible) is `error` rather than invalid JSON.
    static func value(_ sample: HealthSampleUpload) -> Value {
        switch sample.valueStatus {
        case "number":
            guard let text = sample.canonical.value, let number = FHIRJSON.decimal(text) else { return .absent("error") }
            return .quantity(number)
        case "nan": return .absent("not-a-number")
        case "positive-infinity": return .absent("positive-infinity")
        case "negative-infinity": return .absent("negative-infinity")
        default: return .absent("error")  // nres, reserved
        }
    }

    static func deviceResource(_ device: HealthDeviceReference) -> FHIRJSON {
        var members: [(String, FHIRJSON)] = [("resourceType", .string("Device")), ("identifier", identifiers(deviceIdentifierSystem, device.uid))]
        if let manufacturer = device.manufacturer { members.append(("manufacturer", .string(manufacturer))) }
        if let serial = device.serial { members.append(("serialNumber", .string(serial))) }
        if let model = device.model { members.append(("modelNumber", .string(model))) }
        return .object(members)
    }

    static func entry(fullUrl: String, resource: FHIRJSON, type: String, system: String, value: String) -> FHIRJSON {
        .object([
            ("fullUrl", .string(fullUrl)),
            ("resource", resource),
            (
                "request",
                .object([
                    ("method", .string("POST")), ("url", .string(type)),
                    ("ifNoneExist", .string("identifier=" + percentEncoded(system) + "%7C" + percentEncoded(value))),
                ])
            ),
        ])
    }

    static func identifiers(_ system: String, _ value: String) -> FHIRJSON {
        .array([.object([("system", .string(system)), ("value", .string(value))])])
    }

    static func coding(_ system: String, _ code: String, _ display: String?) -> FHIRJSON {
        var members: [(String, FHIRJSON)] = [("system", .string(system)), ("code", .string(code))]
        if let display { members.append(("display", .string(display))) }
        return .object(members)
    }

    static func codeable(_ system: String, _ code: String, _ display: String?) -> FHIRJSON {
        .object([("coding", .array([coding(system, code, display)]))])
    }

    /// RFC 3986 §2.3: everything but the unreserved characters and `:` percent-encoded, so that a search value
    /// holding `|`, `&` or `,` (FHIR search's separators) stays one value in `ifNoneExist`.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }

    /// `nanoseconds` since the Unix epoch as an R4 dateTime in UTC with milliseconds (`2026-11-01T08:00:00.123Z`),
    /// cut toward the past; `nil` outside years 0001…9999, which R4's dateTime cannot write.
    public static func dateTime(nanoseconds: Int64) -> String? {
        let (milliseconds, _) = floorDivide(nanoseconds, 1_000_000)
        let (seconds, millisecond) = floorDivide(milliseconds, 1000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = CivilDate.civil(days: days)
        guard (1...9999).contains(year) else { return nil }
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):"
            + "\(pad(secondOfDay % 60, 2)).\(pad(millisecond, 3))Z"
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value / divisor
        let remainder = value % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// A name-based UUID, version 5 (RFC 9562 §5.5: SHA-1 of namespace and name), in Tether's export namespace.
    static func nameBasedUUID(_ name: String, namespace: [UInt8] = exportNamespace) -> String {
        var bytes = Array(Insecure.SHA1.hash(data: namespace + Array(name.utf8)).prefix(16))
        bytes[6] = bytes[6] & 0x0F | 0x50
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }

    /// The names are `system|value` of a URI system, so the namespace is RFC 9562 §6.6's URL namespace
    /// (6ba7b811-9dad-11d1-80b4-00c04fd430c8).
    static let exportNamespace: [UInt8] = [
        0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
    ]
}
