import ArgumentParser
import Foundation
import Logging
import SyncContract

extension ServerCommand {
    /// `tether-server firmware updates --tenant T [--address A]`: the firmware updates the tenant's gateways finished
    /// (issue 16), for an operator asking what a device runs and how its updates went.
    public struct Firmware: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "The firmware updates the gateways reported.", subcommands: [Updates.self])
        public init() {}

        public struct Updates: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(
                abstract: "Print a tenant's finished firmware updates as JSON lines, newest first: the gateway's document and the gateway.")
            @OptionGroup public var storage: StorageOptions
            @Option(help: "The tenant whose updates to print.") public var tenant: String
            @Option(help: "Only the updates of the device with this Bluetooth address (AA:BB:CC:DD:EE:FF).") public var address: String?

            public init() {}

            public func run() async throws {
                let tenant = tenant
                let address = address?.uppercased()
                let rows = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in
                    try await store.firmwareUpdates(tenant: tenant, address: address)
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                for row in rows {
                    print(String(decoding: try encoder.encode(FirmwareUpdateListing(document: row.document, gateway: row.gateway)), as: UTF8.self))
                }
            }
        }
    }
}

/// One line of `tether-server firmware updates`: the update as the gateway reported it, and which gateway did.
public struct FirmwareUpdateListing: Codable, Hashable, Sendable {
    public var document: FirmwareUpdatePayload
    public var gateway: String

    public init(document: FirmwareUpdatePayload, gateway: String) {
        self.document = document
        self.gateway = gateway
    }
}
