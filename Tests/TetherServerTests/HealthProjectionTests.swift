import Foundation
import SyncContract
import Testing
@testable import TetherServer
import TetherSyncTesting

/// Daily rollups (docs/specs/sync-api.yaml, "Health projections") through the HTTP API on both backends. Expected
/// figures are worked by hand from the samples each test uploads.
@Suite("health projections: server-computed daily rollups per device, user, metric and day")
struct HealthProjectionTests {
    /// 2026-11-01T00:00:00Z in nanoseconds (20758 days after 1970-01-01).
    static let day = Int64(20_758) * 86_400_000_000_000
    static let key = HealthProjectionKey(deviceUid: "periph-1", userIndex: 1, metricCode: 150021, day: "2026-11-01")

    static func sample(_ value: String, at offsetSeconds: Int64, device: String = "periph-1", user: Int? = 1) -> HealthSampleUpload {
        let digits = value.replacingOccurrences(of: ".", with: "")
        let exponent = Int32(-(value.split(separator: ".").dropFirst().first?.count ?? 0))
        var sample = HealthFixtures.sample(
            deviceUID: device, mantissa: Int64(digits) ?? 0, exponent: exponent, value: value, effectiveAt: day + offsetSeconds * 1_000_000_000)
        sample.userIndex = user
        return sample
    }

    static func special(_ status: String, at offsetSeconds: Int64) -> HealthSampleUpload {
        var sample = sample("0", at: offsetSeconds)
        sample.valueStatus = status
        sample.reported = .init(mantissa: nil, exponent: nil, unit: "mm[Hg]")
        sample.canonical = .init(value: nil, unit: "mm[Hg]")
        return sample
    }

    @Test("count, min, max, sum, mean and last over one day; the day's edges and other keys are apart", arguments: ServerBackend.allCases)
    func figures(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let samples = [
                Self.sample("120", at: 0),  // the day's first instant belongs to it
                Self.sample("80.50", at: 3600),
                Self.sample("131.25", at: 86_399),  // the last second
                Self.sample("999", at: -1),  // the day before (2026-10-31T23:59:59Z)
                Self.sample("999", at: 86_400),  // the day after
                Self.sample("999", at: 60, device: "periph-2"),
                Self.sample("999", at: 61, user: 2),
                Self.sample("999", at: 62, user: nil),
            ]
            #expect(try await api.uploaded(samples).allSatisfy { $0.status == .applied })
            let rollups = try await api.projections([Self.key])
            let rollup = try #require(rollups.first)
            #expect(rollup.key == Self.key)
            #expect(rollup.count == 3)
            #expect(rollup.specialCount == 0)
            #expect(rollup.unit == "mm[Hg]")
            #expect(rollup.min == "80.50", "the numeral as uploaded")
            #expect(rollup.max == "131.25")
            #expect(rollup.sum == "331.75")
            #expect(rollup.mean == "110.5833", "331.75 / 3 = 110.58333... to 4 digits")
            #expect(rollup.last == .init(value: "131.25", effectiveAt: Self.day + 86_399_000_000_000))
            // Each neighbour is its own key with its own one sample.
            let others = try await api.projections([
                .init(deviceUid: "periph-1", userIndex: 1, metricCode: 150021, day: "2026-10-31"),
                .init(deviceUid: "periph-1", userIndex: 1, metricCode: 150021, day: "2026-11-02"),
                .init(deviceUid: "periph-2", userIndex: 1, metricCode: 150021, day: "2026-11-01"),
                .init(deviceUid: "periph-1", userIndex: 2, metricCode: 150021, day: "2026-11-01"),
                .init(deviceUid: "periph-1", userIndex: nil, metricCode: 150021, day: "2026-11-01"),
                .init(deviceUid: "periph-1", userIndex: 1, metricCode: 150022, day: "2026-11-01"),
            ])
            #expect(others.map(\.count) == [1, 1, 1, 1, 1, 0])
            #expect(others.prefix(5).allSatisfy { $0.min == "999" && $0.mean == "999.0000" })
            #expect(others[5].min == nil && others[5].mean == nil && others[5].last == nil && others[5].unit == nil)
        }
    }

    @Test("a late sample and a deletion change the rollup and its revision", arguments: ServerBackend.allCases)
    func lateAndDeleted(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let first = Self.sample("100", at: 100), second = Self.sample("110", at: 200)
            #expect(try await api.uploaded([first, second]).map(\.status) == [.applied, .applied])
            let before = try #require(try await api.projections([Self.key]).first)
            #expect((before.count, before.mean, before.last?.value) == (2, "105.0000", "110"))
            #expect(try await api.projections([Self.key]).first?.revision == before.revision, "the same samples, the same revision")
            // A late sample: uploaded after the rollup was taken, effective earlier in the same day.
            let late = Self.sample("70", at: 50)
            #expect(try await api.uploaded([late]).map(\.status) == [.applied])
            let afterLate = try #require(try await api.projections([Self.key]).first)
            #expect((afterLate.count, afterLate.min, afterLate.sum, afterLate.mean) == (3, "70", "280", "93.3333"))
            #expect(afterLate.last?.value == "110", "the latest by effective time, not by arrival")
            #expect(afterLate.revision != before.revision)
            // Deleting the latest: `last` moves back, the figures drop it.
            #expect(try await api.deleted([HealthFixtures.deletion(of: second.uid)]).map(\.status) == [.applied])
            let afterDeletion = try #require(try await api.projections([Self.key]).first)
            #expect((afterDeletion.count, afterDeletion.max, afterDeletion.mean) == (2, "100", "85.0000"))
            #expect(afterDeletion.last == .init(value: "100", effectiveAt: first.effectiveAt))
            #expect(![before.revision, afterLate.revision].contains(afterDeletion.revision))
            // Deleting the rest leaves an empty key, not a missing one.
            #expect(try await api.deleted([HealthFixtures.deletion(of: first.uid), HealthFixtures.deletion(of: late.uid)]).count == 2)
            let empty = try #require(try await api.projections([Self.key]).first)
            #expect((empty.count, empty.min, empty.mean, empty.last) == (0, nil, nil, nil))
            // A tombstone that came first: its sample arrives deleted and never counts.
            let doomed = Self.sample("500", at: 300)
            #expect(try await api.deleted([HealthFixtures.deletion(of: doomed.uid)]).map(\.status) == [.applied])
            #expect(try await api.uploaded([doomed]).map(\.status) == [.applied])
            #expect(try await api.projections([Self.key]).first?.count == 0)
        }
    }

    @Test("special values are counted apart, never in min, max or mean", arguments: ServerBackend.allCases)
    func specialValues(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let samples = [
                Self.sample("90", at: 10), Self.special("nan", at: 20), Self.special("positive-infinity", at: 30),
                Self.special("negative-infinity", at: 40), Self.special("nres", at: 50), Self.sample("95", at: 5),
            ]
            #expect(try await api.uploaded(samples).allSatisfy { $0.status == .applied })
            let rollup = try #require(try await api.projections([Self.key]).first)
            #expect((rollup.count, rollup.specialCount) == (2, 4))
            #expect((rollup.min, rollup.max, rollup.sum, rollup.mean) == ("90", "95", "185", "92.5000"))
            #expect(rollup.last?.value == "90", "the latest number, although a special value came later")
            // A day with only special values: counted, no figures.
            #expect(try await api.uploaded([Self.special("nan", at: 86_400 + 10)]).map(\.status) == [.applied])
            let nextDay = HealthProjectionKey(deviceUid: "periph-1", userIndex: 1, metricCode: 150021, day: "2026-11-02")
            let onlySpecial = try #require(try await api.projections([nextDay]).first)
            #expect((onlySpecial.count, onlySpecial.specialCount, onlySpecial.min, onlySpecial.mean, onlySpecial.last) == (0, 1, nil, nil, nil))
        }
    }

    @Test("values stay exact: a sum and a mean no binary float holds", arguments: ServerBackend.allCases)
    func exactDecimals(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            // 0.1 + 0.2 is 0.30000000000000004 in binary64; 25 significant digits exceed a 64-bit integer.
            var a = Self.sample("0.1", at: 1), b = Self.sample("0.2", at: 2)
            var big = Self.sample("1", at: 3)
            big.canonical.value = "1234567890123456789012345.5"
            a.reported.mantissa = 1
            b.reported.mantissa = 2
            #expect(try await api.uploaded([a, b, big]).allSatisfy { $0.status == .applied })
            let rollup = try #require(try await api.projections([Self.key]).first)
            #expect(rollup.sum == "1234567890123456789012345.8")
            #expect(rollup.min == "0.1")
            // 1234567890123456789012345.8 / 3 = 411522630041152263004115.2666... -> .2667
            #expect(rollup.mean == "411522630041152263004115.2667")
        }
    }

    @Test("tenants are isolated: another tenant's samples never count", arguments: ServerBackend.allCases)
    func tenantIsolation(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let a = try await server.api(tenant: "tenant-a", gateway: "gw-1")
            let b = try await server.api(tenant: "tenant-b", gateway: "gw-9")
            #expect(try await a.uploaded([Self.sample("100", at: 1)]).map(\.status) == [.applied])
            #expect(try await b.uploaded([Self.sample("50", at: 2), Self.sample("60", at: 3)]).allSatisfy { $0.status == .applied })
            let inA = try #require(try await a.projections([Self.key]).first)
            let inB = try #require(try await b.projections([Self.key]).first)
            #expect((inA.count, inA.sum) == (1, "100"))
            #expect((inB.count, inB.sum) == (2, "110"))
            let nobody = try await server.api(tenant: "tenant-c", gateway: "gw-1")
            #expect(try await nobody.projections([Self.key]).first?.count == 0)
        }
    }

    @Test("keys outside the schema are 400; more than 500 is batch-too-long; no token is 401")
    func refusals() async throws {
        try await withServer(.sqlite) { server in
            let api = try await server.api()
            func status(_ json: String) async throws -> (Int, ProblemType?) {
                let answer = try await api.send(.POST, HealthProjection.path, json: Data(json.utf8))
                return (answer.status, answer.problem?.problemType)
            }
            let good = #"{"device_uid":"p","user_index":null,"metric_code":1,"day":"2024-02-29"}"#
            #expect(try await status(#"{"keys":[\#(good)]}"#).0 == 200)
            for bad in [
                #"{"keys":[]}"#, #"{}"#,
                #"{"keys":[{"device_uid":"","metric_code":1,"day":"2024-02-29"}]}"#,
                #"{"keys":[{"device_uid":"p","user_index":256,"metric_code":1,"day":"2024-02-29"}]}"#,
                #"{"keys":[{"device_uid":"p","metric_code":0,"day":"2024-02-29"}]}"#,
                #"{"keys":[{"device_uid":"p","metric_code":4294967296,"day":"2024-02-29"}]}"#,
                #"{"keys":[{"device_uid":"p","metric_code":1,"day":"2023-02-29"}]}"#,
                #"{"keys":[{"device_uid":"p","metric_code":1,"day":"2024-2-29"}]}"#,
                #"{"keys":[{"device_uid":"p","metric_code":1,"day":"0000-01-01"}]}"#,
            ] {
                let (code, type) = try await status(bad)
                #expect(code == 400 && type == .malformedRequest, "\(bad)")
            }
            let many = Array(repeating: good, count: HealthProjection.maximumKeysPerRequest + 1).joined(separator: ",")
            let (code, type) = try await status(#"{"keys":[\#(many)]}"#)
            #expect(code == 400 && type == .batchTooLong)
            let anonymous = API(baseURL: api.baseURL, token: nil)
            #expect(try await anonymous.send(.POST, HealthProjection.path, json: Data(#"{"keys":[\#(good)]}"#.utf8)).status == 401)
        }
    }
}

extension API {
    func projections(_ keys: [HealthProjectionKey]) async throws -> [HealthRollup] {
        let answer = try await send(.POST, HealthProjection.path, json: try JSONEncoder().encode(HealthProjectionsRequest(keys: keys)))
        guard answer.status == 200 else { throw UnexpectedAnswer(status: answer.status, body: answer.text) }
        return try answer.decode(HealthProjectionsResponse.self).projections
    }
}
