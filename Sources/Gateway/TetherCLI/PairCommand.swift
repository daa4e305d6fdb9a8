import ArgumentParser
import DBus
import Foundation
import TetherControlClient
import ControlContract

/// `tether pair ADDRESS`: pair a device through tetherd, answering BlueZ's questions on this terminal.
struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair a device and add it to the gateway; asks for the passkey or a confirmation when needed.",
        discussion: """
            tetherd forwards BlueZ's questions to this command (io.tether.PairingPrompt1). A passkey device shows \
            six digits to type here; a numeric-comparison device shows a number to confirm. For scripts, \
            --passkey answers a passkey question (and confirms only that number) and --yes confirms any number. \
            Without them the answer is read from stdin (a terminal or a pipe); end of input cancels the pairing. \
            Needs root or the 'tether' group.
            """)

    @OptionGroup var connection: BusOptions

    @Argument(help: ArgumentHelp("The device's Bluetooth address, as 'tether scan' shows it.", valueName: "address"))
    var address: String

    @Option(help: ArgumentHelp("Answer a passkey question with this number (0-999999).", valueName: "digits"))
    var passkey: UInt32?

    @Flag(help: "Confirm a numeric-comparison question without asking.")
    var yes = false

    @Option(help: ArgumentHelp("Give up after this many seconds.", valueName: "seconds"))
    var timeout: Int = 150

    @Flag(help: "Print the paired device's record as JSON.")
    var json = false

    func validate() throws {
        if let passkey, passkey > 999_999 {
            throw ValidationError("--passkey must have at most six digits (0-999999), not \(passkey)")
        }
        guard Self.isAddress(address) else {
            throw ValidationError("'\(address)' is not a Bluetooth address (six hex pairs like C0:54:45:00:00:01)")
        }
        guard (5...3600).contains(timeout) else {
            throw ValidationError("--timeout must be between 5 and 3600 seconds, not \(timeout)")
        }
    }

    static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }

    func run() async throws {
        let responder = TerminalPairingResponder(passkey: passkey, assumeYes: yes)
        let interruption = Interruption()
        defer { interruption.cancel() }
        let (address, timeout) = (self.address, self.timeout)
        let device = try await connection.withGateway(callTimeout: .seconds(timeout)) { client in
            // The prompt only answers the daemon's current owner (see PairingPrompt).
            guard let owner = try await client.connection.nameOwner(of: GatewayContract.busName) else {
                throw GatewayControlError.daemonNotRunning
            }
            let path = PairingPrompt.path(processIdentifier: getpid())
            try await PairingPrompt.export(on: client.connection, at: path, daemon: owner, responder: responder)
            defer { client.connection.objectServer.unexport(path) }
            return try await withThrowingTaskGroup(of: GatewayRecord?.self) { group in
                group.addTask { try await client.pair(address: address, prompt: path, timeout: .seconds(timeout)) }
                group.addTask {
                    await interruption.wait()
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                guard let first else {
                    // Ctrl-C: leaving the call makes tetherd cancel the pairing (the prompt disappears with us).
                    throw GatewayControlError.daemon(.promptCanceled, message: "pairing interrupted; \(address) was not paired")
                }
                return first
            }
        }
        if json {
            Output.line(RecordJSON.text(device))
        } else {
            let serial = device.string("serial").map { " as \($0)" } ?? ""
            let name = device.string("name").map { " (\($0))" } ?? ""
            Output.line("paired \(address)\(name)\(serial)")
        }
    }
}

/// Answers pairing questions from flags or, when allowed, from the terminal.
///
/// Lines are read on a plain thread: a blocking read must not occupy one of the few Swift concurrency threads
/// while the Pair call it belongs to is waiting for its reply.
final class TerminalPairingResponder: PairingResponder {
    let presetPasskey: UInt32?
    let assumeYes: Bool

    init(passkey: UInt32?, assumeYes: Bool) {
        presetPasskey = passkey
        self.assumeYes = assumeYes
    }

    func passkey(for address: String) async -> UInt32? {
        if let presetPasskey { return presetPasskey }
        for _ in 0..<3 {
            guard let line = await Self.ask("Enter the 6-digit passkey shown on \(address): ") else {
                standardError("tether: no answer (end of input); give the passkey with --passkey DIGITS")
                return nil
            }
            let digits = line.trimmingCharacters(in: .whitespaces)
            if digits.count <= 6, digits.allSatisfy(\.isASCII), let value = UInt32(digits), value <= 999_999 {
                return value
            }
            standardError("tether: '\(digits)' is not a passkey; type the six digits the device shows")
        }
        return nil
    }

    func confirm(_ passkey: UInt32, for address: String) async -> Bool {
        let shown = String(format: "%06u", passkey)
        if assumeYes { return true }
        if let presetPasskey { return presetPasskey == passkey }
        guard let line = await Self.ask("Does \(address) show \(shown)? [y/N] ") else {
            standardError("tether: no answer (end of input); confirm with --yes")
            return false
        }
        return ["y", "yes"].contains(line.trimmingCharacters(in: .whitespaces).lowercased())
    }

    func display(_ passkey: UInt32, entered: UInt16, for address: String) async {
        standardError(String(format: "Type %06u on %@ (%u keys entered)", passkey, address, entered))
    }

    func canceled() async {
        standardError("tether: tetherd canceled the question (no answer in time, or BlueZ gave up)")
    }

    /// Prints `question` on stderr and reads one line from stdin; nil at end of input.
    static func ask(_ question: String) async -> String? {
        FileHandle.standardError.write(Data(question.utf8))
        return await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: readLine(strippingNewline: true)) }.start()
        }
    }
}
