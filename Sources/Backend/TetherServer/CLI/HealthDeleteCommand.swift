import ArgumentParser
import Foundation
import Logging
import SyncContract

extension ServerCommand.Health {
    /// `tether-server health delete --tenant T --sample UID [--note TEXT]`: the backend's deletion of a health sample
    /// (`HealthSampleDeletion`). The tenant's gateways pull it from the change feed at their next sync and delete
    /// their copy; the sample stays on the server, marked deleted, as a gateway's tombstone leaves it.
    public struct Delete: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Delete a health sample on the backend; the tenant's gateways delete their copy at their next sync.",
            discussion: """
                Prints the tombstone as JSON. A sample a tombstone already deleted prints when, and changes nothing. \
                Exit status 1: the tenant holds no such sample.
                """)
        @OptionGroup public var storage: StorageOptions
        @Option(help: "The tenant that holds the sample.") public var tenant: String
        @Option(help: "The sample's uid (as `tether-server health samples` prints it).") public var sample: String
        @Option(help: "Why, for the record: 1 to 1000 characters.") public var note: String?

        public init() {}

        public func validate() throws {
            guard UUID(uuidString: sample) != nil else { throw ValidationError("--sample must be a UUID") }
            if let note, note.isEmpty || note.unicodeScalars.count > 1000 { throw ValidationError("--note must be 1 to 1000 characters") }
        }

        public func run() async throws {
            let now = Int64((Date().timeIntervalSince1970 * 1e9).rounded())
            let tombstone = HealthDeletionUpload(
                uid: UUID().uuidString.lowercased(), sampleUid: sample.lowercased(), reason: "backend", requestedBy: "backend",
                replacementSampleUid: nil, note: note, requestedAt: now)
            let tenant = tenant
            let outcome = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in
                try await store.deleteHealthSample(tenant: tenant, tombstone: tombstone, storedAt: now)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            switch outcome {
            case .deleted(let stored):
                print(String(decoding: try encoder.encode(stored), as: UTF8.self))
            case .alreadyDeleted(let at):
                print("sample \(sample.lowercased()) was already deleted (deleted_at \(at)); nothing changed")
            case .unknownSample:
                throw CommandFailure("tenant \(tenant) holds no health sample \(sample.lowercased())")
            case .rejected(let reason):
                throw ValidationError(reason)
            }
        }
    }
}
