import ArgumentParser
import DBus
import Foundation

/// `tether-vm-central`: the stand-in gateway of the real-BlueZ VM scenario.
public struct CentralCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tether-vm-central",
        abstract: "Collect hits from one Tether device through real BlueZ (the VM scenario's central).",
        discussion: """
            Scans on ADAPTER, pairs with --passkey, connects, subscribes (AcquireNotify, then StartNotify on the next \
            connection), stores hits with ACK after commit, sets the device's settings, and reconnects until \
            --expect-hits are stored. Writes a JSON summary. Exit 1 on timeout.
            """)

    @Option(help: "The adapter's object path.") var adapter = "/org/bluez/hci1"
    @Option(help: "The device's 6-digit passkey.") var passkey: UInt32?
    @Option(help: "The gateway database (SQLite).") var database: String
    @Option(help: "Stop once this many hits are stored.") var expectHits: Int
    @Option(help: "Where to write the JSON summary.") var summary: String
    @Option(help: "Bound on the whole run, in seconds.") var timeoutSeconds = 200

    public init() {}

    public func validate() throws {
        if let passkey, passkey > 999_999 { throw ValidationError("--passkey must be at most 999999, not \(passkey)") }
        if expectHits < 1 { throw ValidationError("--expect-hits must be positive") }
    }

    public func run() async throws {
        var configuration = CentralConfiguration(databasePath: database, expectedHits: expectHits, summaryPath: summary)
        configuration.adapter = adapter
        configuration.passkey = passkey
        configuration.deadline = .seconds(timeoutSeconds)
        let connection = try await DBusConnection.connect(to: .system)
        let central = try Central(configuration: configuration, connection: connection)
        do {
            try await central.run()
        } catch {
            Log.error("\(error)")
            throw ExitCode(1)
        }
        await connection.close()
    }
}
