import ArgumentParser
import Foundation
import SMP
import TetherFirmware
import TetherPrimitives

/// `--udp HOST:PORT`: a device reached directly over SMP's UDP transport (Zephyr, port 1337 by default), without
/// tetherd. Devices on BLE go through tetherd (issue 16, not yet built), so for now `--udp` is required.
struct UDPDeviceOptions: ParsableArguments {
    @Option(name: .customLong("udp"), help: ArgumentHelp("The device's SMP UDP address (port 1337 when omitted).", valueName: "host:port"))
    var udp: String

    @Flag(name: .customLong("smp-v1"), help: "Speak the original SMP (v1) instead of SMP v2.")
    var smpV1 = false

    func validate() throws {
        guard UDPTarget(parsing: udp) != nil else { throw ValidationError("--udp wants HOST:PORT, [IPv6]:PORT or HOST, not '\(udp)'.") }
    }

    /// Connects, runs `body`, and maps a failure to a message and exit status 1 (the device) or 2 (the address).
    func run<T>(_ body: (FirmwareUDPClient) throws(FirmwareTransportError) -> T) throws -> T {
        guard let target = UDPTarget(parsing: udp) else { throw TetherExitCode.badInput }
        do {
            let client = try FirmwareUDPClient(target: target, configuration: SMPUDPSession.configuration(version: smpV1 ? .v1 : .v2))
            return try body(client)
        } catch {
            if case .transport = error { throw firmwareFailure("\(target): \(error)", TetherExitCode.badInput) }
            throw firmwareFailure("\(target): \(error)", TetherExitCode.operationFailed)
        }
    }
}

extension FirmwareCommand {
    /// `tether firmware list --udp HOST:PORT [--json]`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the images in a device's slots: version, hash (the SHA256 TLV) and state.")
        @OptionGroup var device: UDPDeviceOptions
        @Flag(help: "Print the slots as one JSON array.") var json = false

        func run() throws {
            let state = try device.run { client throws(FirmwareTransportError) in try client.imageState() }
            Output.line(json ? FirmwareSlotText.json(state) : FirmwareSlotText.table(state))
        }
    }

    /// `tether firmware echo --udp HOST:PORT TEXT`.
    struct Echo: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "echo", abstract: "Ask the device to echo TEXT (is it there?).")
        @OptionGroup var device: UDPDeviceOptions
        @Argument(help: "The text to echo.") var text: String

        func run() throws { Output.line(try device.run { client throws(FirmwareTransportError) in try client.echo(text) }) }
    }

    /// `tether firmware test --udp HOST:PORT HASH`.
    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test", abstract: "Mark the image with HASH to run once, on test, at the next reset.",
            discussion: "MCUboot reverts to the previous image at the reset after that unless the new image is confirmed.")
        @OptionGroup var device: UDPDeviceOptions
        @Argument(help: ArgumentHelp("The image's hash as `list` shows it (64 hex digits).", valueName: "hash")) var hash: String

        func validate() throws { guard FirmwareSlotText.parseHash(hash) != nil else { throw ValidationError("HASH must be 64 hex digits.") } }

        func run() throws {
            let bytes = FirmwareSlotText.parseHash(hash) ?? []
            Output.line(FirmwareSlotText.table(try device.run { client throws(FirmwareTransportError) in try client.test(hash: bytes) }))
        }
    }

    /// `tether firmware confirm --udp HOST:PORT [HASH]`.
    struct Confirm: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "confirm", abstract: "Confirm the running image (or make the image with HASH permanent).",
            discussion: "Without HASH the running image is confirmed: the safe choice once it has proved itself.")
        @OptionGroup var device: UDPDeviceOptions
        @Argument(help: ArgumentHelp("An image's hash (64 hex digits); omit it to confirm the running image.", valueName: "hash"))
        var hash: String?

        func validate() throws {
            if let hash, FirmwareSlotText.parseHash(hash) == nil { throw ValidationError("HASH must be 64 hex digits.") }
        }

        func run() throws {
            let bytes = hash.flatMap(FirmwareSlotText.parseHash)
            Output.line(FirmwareSlotText.table(try device.run { client throws(FirmwareTransportError) in try client.confirm(hash: bytes) }))
        }
    }

    /// `tether firmware reset --udp HOST:PORT`.
    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset", abstract: "Reset the device (MCUboot then swaps in an image marked for test or permanent).")
        @OptionGroup var device: UDPDeviceOptions

        func run() throws { try device.run { client throws(FirmwareTransportError) in try client.reset() } }
    }

    /// `tether firmware erase --udp HOST:PORT`.
    struct Erase: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "erase", abstract: "Erase the device's secondary slot (refused while its image is pending or is the fallback).")
        @OptionGroup var device: UDPDeviceOptions

        func run() throws { try device.run { client throws(FirmwareTransportError) in try client.erase() } }
    }
}

/// How `list`, `test` and `confirm` print a device's slots.
enum FirmwareSlotText {
    static func flags(_ slot: SMPImageSlotState) -> String {
        let names = [(slot.active, "active"), (slot.confirmed, "confirmed"), (slot.pending, "pending"), (slot.permanent, "permanent"),
                     (slot.bootable, "bootable")]
        return names.filter(\.0).map(\.1).joined(separator: ",")
    }

    static func table(_ state: SMPImageState) -> String {
        var table = TextTable("IMAGE", "SLOT", "VERSION", "FLAGS", "HASH")
        for slot in state.images {
            table.add(["\(slot.image)", "\(slot.slot)", slot.version, flags(slot), slot.hash.map { Hex.encode($0) } ?? "-"])
        }
        return table.lines.joined(separator: "\n")
    }

    static func json(_ state: SMPImageState) -> String {
        let objects: [[String: Any]] = state.images.map { slot in
            [
                "image": slot.image, "slot": slot.slot, "version": slot.version, "hash": slot.hash.map { Hex.encode($0) } as Any,
                "active": slot.active, "confirmed": slot.confirmed, "pending": slot.pending, "permanent": slot.permanent,
                "bootable": slot.bootable,
            ]
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// 64 hex digits → 32 bytes; nil otherwise.
    static func parseHash(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<(index + 2)], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
