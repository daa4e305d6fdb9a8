import ArgumentParser
import Foundation
import Logging
import SyncContract

extension ServerCommand {
    /// `tether-server health samples --tenant T`: what the server holds of a tenant's health data, for the demo and
    /// end-to-end tests to compare with what the gateway read.
    public struct Health: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "The health samples the gateways uploaded, and the operator's deletions of them.", subcommands: [Samples.self, Export.self, Delete.self])
        public init() {}

        public struct Samples: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(
                abstract: "Print a tenant's health samples as JSON lines, deleted ones included, by effective time.")
            @OptionGroup public var storage: StorageOptions
            @Option(help: "The tenant whose samples to print.") public var tenant: String

            public init() {}

            public func run() async throws {
                let tenant = tenant
                let rows = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in
                    try await store.healthSamples(tenant: tenant)
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                for row in rows {
                    print(String(decoding: try encoder.encode(HealthSampleListing(row)), as: UTF8.self))
                }
            }
        }
    }
}

/// One line of `tether-server health samples`: a sample's identity, device, metric, exact value and whether a
/// tombstone deleted it. Decodable, so that tests and the demo read the lines with the same type.
public struct HealthSampleListing: Codable, Hashable, Sendable {
    public var uid: String
    public var dedupKey: String
    public var deviceUID: String
    public var metricCode: Int
    public var valueStatus: String
    /// The canonical value as a decimal numeral; `nil` unless `valueStatus` is `number`.
    public var value: String?
    public var unit: String
    /// Nanoseconds since the Unix epoch.
    public var effectiveAt: Int64
    public var deleted: Bool
    public var deletedAt: Int64?
    public var gateway: String

    public init(_ row: HealthSampleRow) {
        uid = row.sample.uid
        dedupKey = row.sample.dedupKey
        deviceUID = row.sample.device.uid
        metricCode = row.sample.metricCode
        valueStatus = row.sample.valueStatus
        value = row.sample.canonical.value
        unit = row.sample.canonical.unit
        effectiveAt = row.sample.effectiveAt
        deleted = row.deletedAt != nil
        deletedAt = row.deletedAt
        gateway = row.gateway
    }

    enum CodingKeys: String, CodingKey {
        case uid, value, unit, deleted, gateway
        case dedupKey = "dedup_key"
        case deviceUID = "device_uid"
        case metricCode = "metric_code"
        case valueStatus = "value_status"
        case effectiveAt = "effective_at"
        case deletedAt = "deleted_at"
    }
}
