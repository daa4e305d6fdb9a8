import Foundation
import SyncContract
import Testing
@testable import TetherServer

/// The FHIR export's mapping (`FHIRExport`) on hand-written samples. Expected codes come from the FHIR R4
/// specification and the PHD IG as FHIRVocabulary cites them; values are compared as the JSON text written.
@Suite("FHIR export: samples to an R4 transaction Bundle")
struct FHIRExportMappingTests {
    static func row(_ sample: HealthSampleUpload, deletedAt: Int64? = nil, gateway: String = "gw-1") -> HealthSampleRow {
        HealthSampleRow(sample: sample, deletedAt: deletedAt, gateway: gateway, storedAt: 1)
    }

    static func sample(
        code: Int = 150021, status: String = "number", value: String? = "120", unit: String = "mm[Hg]", effectiveAt: Int64 = 1_793_520_000_123_456_789,
        replaces: String? = nil, deviceUID: String = "0190a5b2-0000-7000-8000-00000000d001"
    ) -> HealthSampleUpload {
        var sample = HealthFixtures.sample(deviceUID: deviceUID, value: value ?? "0", effectiveAt: effectiveAt)
        sample.metricCode = code
        sample.valueStatus = status
        sample.canonical = .init(value: value, unit: unit)
        sample.replaces = replaces
        return sample
    }

    static func observations(_ bundle: FHIRJSON) -> [FHIRJSON] {
        entries(bundle).compactMap { $0["resource"] }.filter { $0["resourceType"] == .string("Observation") }
    }

    static func entries(_ bundle: FHIRJSON) -> [FHIRJSON] {
        guard case .array(let entries) = bundle["entry"] else { return [] }
        return entries
    }

    /// A string member's text, `nil` for anything else.
    static func text(_ value: FHIRJSON?) -> String? {
        guard case .string(let text) = value else { return nil }
        return text
    }

    static func codings(_ concept: FHIRJSON?) -> [String] {
        guard case .array(let codings) = concept?["coding"] else { return [] }
        return codings.compactMap { coding in
            guard case .string(let system) = coding["system"], case .string(let code) = coding["code"] else { return nil }
            return "\(system)|\(code)"
        }
    }

    @Test("a canonical value goes out as the numeral it was stored as, 0.1 and long mantissas included")
    func exactDecimals() {
        let numerals = ["0.1", "120", "-0.50", "98.60", "123456789012345678901.123456789", "0.30000000000000004441"]
        let bundle = FHIRExport.bundle(numerals.map { Self.row(Self.sample(value: $0)) })
        let json = bundle.serialized
        for numeral in numerals {
            #expect(json.contains("\"valueQuantity\":{\"value\":\(numeral),\"unit\":\"mm[Hg]\""), "\(numeral) not written verbatim")
        }
        let values = Self.observations(bundle).map { $0["valueQuantity"]?["value"] }
        #expect(values == numerals.map { Optional(FHIRJSON.number($0)) })
        let quantity = Self.observations(bundle).first?["valueQuantity"]
        #expect(quantity?["system"] == .string("http://unitsofmeasure.org"))
        #expect(quantity?["code"] == .string("mm[Hg]"))
    }

    @Test("a value that is not a number has a data-absent-reason and no quantity")
    func dataAbsent() {
        let cases: [(String, String)] = [
            ("nan", "not-a-number"), ("nres", "error"), ("reserved", "error"), ("positive-infinity", "positive-infinity"),
            ("negative-infinity", "negative-infinity"),
        ]
        let bundle = FHIRExport.bundle(cases.map { Self.row(Self.sample(status: $0.0, value: nil)) })
        let observations = Self.observations(bundle)
        #expect(observations.count == cases.count)
        for (observation, (status, reason)) in zip(observations, cases) {
            #expect(observation["valueQuantity"] == nil, "\(status)")
            #expect(Self.codings(observation["dataAbsentReason"]) == ["http://terminology.hl7.org/CodeSystem/data-absent-reason|\(reason)"], "\(status)")
        }
        // A numeral that is not a FHIR decimal (impossible after the upload's checks) is not written as broken JSON.
        let broken = FHIRExport.bundle([Self.row(Self.sample(value: "1e"))])
        #expect(Self.codings(Self.observations(broken).first?["dataAbsentReason"]).last?.hasSuffix("|error") == true)
    }

    @Test("deleted samples are left out; a correction is amended and names what it replaces")
    func deletedAndCorrected() {
        let kept = Self.sample(value: "120")
        let deleted = Self.sample(value: "121")
        let correction = Self.sample(value: "122", replaces: deleted.uid)
        let bundle = FHIRExport.bundle([Self.row(kept), Self.row(deleted, deletedAt: 5), Self.row(correction)])
        let observations = Self.observations(bundle)
        #expect(observations.map { $0["identifier"] } == [kept.uid, correction.uid].map { Optional(Self.identifier($0)) })
        #expect(observations.map { Self.text($0["status"]) } == ["final", "amended"])
        #expect(observations.last?["note"] == .array([.object([("text", .string("Replaces urn:tether:health-sample|\(deleted.uid)"))])]))
        #expect(observations.first?["note"] == nil)
    }

    static func identifier(_ uid: String) -> FHIRJSON {
        .array([.object([("system", .string("urn:tether:health-sample")), ("value", .string(uid))])])
    }

    @Test("codes: MDC always, LOINC and vital-signs where FHIR names them, glucose by its specimen's MDC code")
    func codes() {
        let mdc = "urn:iso:std:iso:11073:10101"
        let expected: [(Int, [String], Bool)] = [
            (150021, ["\(mdc)|150021", "http://loinc.org|8480-6"], true),
            (150022, ["\(mdc)|150022", "http://loinc.org|8462-4"], true),
            (150023, ["\(mdc)|150023", "http://loinc.org|8478-0"], true),
            (149546, ["\(mdc)|149546", "http://loinc.org|8867-4"], true),
            (147842, ["\(mdc)|147842", "http://loinc.org|8867-4"], true),
            (150364, ["\(mdc)|150364", "http://loinc.org|8310-5"], true),
            (188736, ["\(mdc)|188736", "http://loinc.org|29463-7"], true),
            (150456, ["\(mdc)|150456", "http://loinc.org|2708-6", "http://loinc.org|59408-5"], true),
            // IEEE 11073-10417: 2 << 16 | 29112 capillary whole blood, | 29116 capillary plasma, | 29296
            // undetermined plasma; 160020 MDC_CONC_GLU_GEN.
            (160184, ["\(mdc)|160184"], false),
            (160188, ["\(mdc)|160188"], false),
            (160368, ["\(mdc)|160368"], false),
            (160020, ["\(mdc)|160020"], false),
            (999_999, ["\(mdc)|999999"], false),
        ]
        let bundle = FHIRExport.bundle(expected.map { Self.row(Self.sample(code: $0.0)) })
        let observations = Self.observations(bundle)
        for (observation, (code, codings, vital)) in zip(observations, expected) {
            #expect(Self.codings(observation["code"]) == codings, "\(code)")
            let category: [String] = vital ? ["http://terminology.hl7.org/CodeSystem/observation-category|vital-signs"] : []
            guard case .array(let categories) = observation["category"] ?? .array([]) else { Issue.record("category"); continue }
            #expect(categories.flatMap { Self.codings($0) } == category, "\(code)")
        }
        guard case .array(let glucose) = observations[8]["code"]?["coding"] else { Issue.record("coding"); return }
        #expect(glucose.first?["display"] == .string("MDC_CONC_GLU_CAPILLARY_WHOLEBLOOD"))
    }

    @Test("every entry is a conditional create on its identifier, with a urn:uuid fullUrl; references resolve")
    func conditionalCreates() throws {
        let first = Self.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d001")
        let second = Self.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d002")
        let third = Self.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d001")
        let bundle = FHIRExport.bundle([Self.row(first), Self.row(second, gateway: "gw|2&x"), Self.row(third)])
        #expect(bundle["resourceType"] == .string("Bundle"))
        #expect(bundle["type"] == .string("transaction"))
        let entries = Self.entries(bundle)
        // Two devices, two gateways, three observations; devices first, in order of first use.
        #expect(entries.count == 7)
        let requests = entries.map { entry -> String in
            guard case .string(let method) = entry["request"]?["method"], case .string(let url) = entry["request"]?["url"],
                case .string(let condition) = entry["request"]?["ifNoneExist"]
            else { return "missing" }
            return "\(method) \(url) \(condition)"
        }
        #expect(
            requests == [
                "POST Device identifier=urn:tether:health-device%7C0190a5b2-0000-7000-8000-00000000d001",
                "POST Device identifier=urn:tether:gateway%7Cgw-1",
                "POST Device identifier=urn:tether:health-device%7C0190a5b2-0000-7000-8000-00000000d002",
                "POST Device identifier=urn:tether:gateway%7Cgw%7C2%26x",
                "POST Observation identifier=urn:tether:health-sample%7C\(first.uid)",
                "POST Observation identifier=urn:tether:health-sample%7C\(second.uid)",
                "POST Observation identifier=urn:tether:health-sample%7C\(third.uid)",
            ])
        let urls = entries.compactMap { entry -> String? in
            guard case .string(let url) = entry["fullUrl"] else { return nil }
            return url
        }
        #expect(urls.count == 7 && Set(urls).count == 7 && urls.allSatisfy { $0.hasPrefix("urn:uuid:") && $0.count == 45 })
        #expect(urls[4] == "urn:uuid:\(first.uid)")
        let observations = Self.observations(bundle)
        #expect(observations.map { Self.text($0["device"]?["reference"]) } == [urls[0], urls[2], urls[0]])
        let gateways = observations.map { observation -> String? in
            guard case .array(let extensions) = observation["extension"], extensions.count == 1 else { return nil }
            #expect(extensions[0]["url"] == .string("http://hl7.org/fhir/StructureDefinition/observation-gatewayDevice"))
            return Self.text(extensions[0]["valueReference"]?["reference"])
        }
        #expect(gateways == [urls[1], urls[3], urls[1]])
        let device = entries[0]["resource"]
        #expect(device?["manufacturer"] == .string("Example"))
        #expect(device?["modelNumber"] == .string("BP-1"))
        #expect(device?["serialNumber"] == .string("SN-7"))
        // The same rows always give the same bundle.
        #expect(FHIRExport.bundle([Self.row(first), Self.row(second, gateway: "gw|2&x"), Self.row(third)]).serialized == bundle.serialized)
    }

    @Test("effectiveDateTime is UTC, cut toward the past to milliseconds")
    func dateTimes() {
        // Expected values computed from the instants by hand (and by Python's datetime: 1970-01-01 + timedelta).
        #expect(FHIRExport.dateTime(nanoseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(FHIRExport.dateTime(nanoseconds: 1_793_520_000_123_456_789) == "2026-11-01T08:00:00.123Z")
        #expect(FHIRExport.dateTime(nanoseconds: 951_782_400_999_999_999) == "2000-02-29T00:00:00.999Z")
        #expect(FHIRExport.dateTime(nanoseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(FHIRExport.dateTime(nanoseconds: Int64.min) == "1677-09-21T00:12:43.145Z")
        let observation = Self.observations(FHIRExport.bundle([Self.row(Self.sample())])).first
        #expect(observation?["effectiveDateTime"] == .string("2026-11-01T08:00:00.123Z"))
    }

    @Test("UUIDv5 matches RFC 9562's example")
    func nameBasedUUID() {
        // RFC 9562 Appendix A.4: "www.example.com" in the DNS namespace (6ba7b810-9dad-11d1-80b4-00c04fd430c8).
        let dns: [UInt8] = [0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8]
        #expect(FHIRExport.nameBasedUUID("www.example.com", namespace: dns) == "2ed6657d-e927-568b-95e1-2665a8aea6a2")
    }

    @Test("JSON: strings escaped (RFC 8259 §7), FHIR decimals recognised")
    func json() {
        #expect(FHIRJSON.string("a\"b\\c\n\u{1}é").serialized == #""a\"b\\c\n\u0001é""#)
        for valid in ["0", "-0.5", "120", "1.00", "1e3", "2.5E-7", "123456789012345678901.123456789"] { #expect(FHIRJSON.isFHIRDecimal(valid), "\(valid)") }
        for invalid in ["", "-", "01", ".5", "5.", "1e", "+1", "1.2.3", "NaN", "Infinity", " 1", "0x10"] { #expect(!FHIRJSON.isFHIRDecimal(invalid), "\(invalid)") }
    }
}
