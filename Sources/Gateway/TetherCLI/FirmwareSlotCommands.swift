import ArgumentParser
import Foundation
import SMP
import TetherControlClient
import TetherFirmware
import TetherPrimitives

/// Which device an image command talks to: one tetherd serves, named by serial or address (the command goes
/// through tetherd's `FirmwareCommand`: tetherd owns the radio and takes the device from its session meanwhile), or
/// with `--udp HOST:PORT` one reached directly over SMP's UDP transport (Zephyr, port 1337 by default), without
/// tetherd. Both speak through the same SMP client core.
struct FirmwareTargetOptions: ParsableArguments {
    @Option(
        name: .customLong("udp"),
        help: ArgumentHelp("Reach the device directly at this SMP UDP address (port 1337 when omitted) instead of through tetherd.", valueName: "host:port"))
    var udp: String?

    @Flag(name: .customLong("smp-v1"), help: "Speak the original SMP (v1) instead of SMP v2 (with --udp).")
    var smpV1 = false

    @OptionGroup var connection: BusOptions

    /// How long tetherd may take: it may have to connect the device first (up to 30 s) before the command's own
    /// requests (each bounded by the SMP session's time-out and retries).
    static let daemonTimeout: Duration = .seconds(90)

    /// `operands` as the command's arguments: DEVICE first unless --udp names the device.
    func split(_ operands: [String], expecting range: ClosedRange<Int>, usage: String) throws -> (device: String?, rest: [String]) {
        if let udp {
            guard UDPTarget(parsing: udp) != nil else { throw ValidationError("--udp wants HOST:PORT, [IPv6]:PORT or HOST, not '\(udp)'.") }
            guard range.contains(operands.count) else { throw ValidationError("Usage: \(usage) (with --udp, no DEVICE).") }
            return (nil, operands)
        }
        guard smpV1 == false else { throw ValidationError("--smp-v1 is for --udp; tetherd speaks SMP v2 to the devices it serves.") }
        guard let device = operands.first, range.contains(operands.count - 1) else {
            throw ValidationError("Name the device (serial or address), or a device with --udp HOST:PORT. Usage: \(usage)")
        }
        return (device, Array(operands.dropFirst()))
    }

    /// Over UDP: connects, runs `body`, and maps a failure to a message and exit status 1 (the device) or 2 (the
    /// address).
    func runOverUDP<T>(_ body: (FirmwareUDPClient) throws(FirmwareTransportError) -> T) throws -> T {
        guard let udp, let target = UDPTarget(parsing: udp) else { throw TetherExitCode.badInput }
        do {
            let client = try FirmwareUDPClient(target: target, configuration: SMPUDPSession.configuration(version: smpV1 ? .v1 : .v2))
            return try body(client)
        } catch {
            if case .transport = error { throw firmwareFailure("\(target): \(error)", TetherExitCode.badInput) }
            throw firmwareFailure("\(target): \(error)", TetherExitCode.operationFailed)
        }
    }

    /// Through tetherd: `FirmwareCommand`, the slots after it as an image state.
    func runThroughDaemon(device: String, command: String, hash: [UInt8]? = nil) async throws -> SMPImageState {
        let records = try await connection.withGateway(callTimeout: Self.daemonTimeout) { client in
            try await client.firmwareCommand(device: device, command: command, hash: hash, timeout: Self.daemonTimeout)
        }
        return FirmwareSlotText.state(records)
    }
}

extension FirmwareCommand {
    /// `tether firmware list DEVICE [--json]`, or `list --udp HOST:PORT`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the images in a device's slots: version, hash (the SHA256 TLV) and state.")
        @OptionGroup var target: FirmwareTargetOptions
        @Argument(help: ArgumentHelp("The device tetherd serves (serial or address); omit it with --udp.", valueName: "device"))
        var operands: [String] = []
        @Flag(help: "Print the slots as one JSON array.") var json = false

        static let usage = "tether firmware list DEVICE | --udp HOST:PORT"
        func validate() throws { _ = try target.split(operands, expecting: 0...0, usage: Self.usage) }

        func run() async throws {
            let (device, _) = try target.split(operands, expecting: 0...0, usage: Self.usage)
            let state: SMPImageState
            if let device {
                state = try await target.runThroughDaemon(device: device, command: "list")
            } else {
                state = try target.runOverUDP { client throws(FirmwareTransportError) in try client.imageState() }
            }
            Output.line(json ? FirmwareSlotText.json(state) : FirmwareSlotText.table(state))
        }
    }

    /// `tether firmware echo --udp HOST:PORT TEXT`.
    struct Echo: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "echo", abstract: "Ask a device reached over UDP to echo TEXT (is it there?).")
        @Option(name: .customLong("udp"), help: ArgumentHelp("The device's SMP UDP address (port 1337 when omitted).", valueName: "host:port"))
        var udp: String
        @Flag(name: .customLong("smp-v1"), help: "Speak the original SMP (v1) instead of SMP v2.") var smpV1 = false
        @Argument(help: "The text to echo.") var text: String

        func validate() throws {
            guard UDPTarget(parsing: udp) != nil else { throw ValidationError("--udp wants HOST:PORT, [IPv6]:PORT or HOST, not '\(udp)'.") }
        }

        func run() throws {
            var target = FirmwareTargetOptions()
            target.udp = udp
            target.smpV1 = smpV1
            Output.line(try target.runOverUDP { client throws(FirmwareTransportError) in try client.echo(text) })
        }
    }

    /// `tether firmware test DEVICE HASH`, or `test --udp HOST:PORT HASH`.
    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test", abstract: "Mark the image with HASH to run once, on test, at the next reset.",
            discussion: "MCUboot reverts to the previous image at the reset after that unless the new image is confirmed.")
        @OptionGroup var target: FirmwareTargetOptions
        @Argument(help: ArgumentHelp("The device tetherd serves (omit it with --udp), then the image's hash as `list` shows it (64 hex digits).", valueName: "device hash"))
        var operands: [String] = []

        static let usage = "tether firmware test DEVICE HASH | --udp HOST:PORT HASH"
        func validate() throws {
            let (_, rest) = try target.split(operands, expecting: 1...1, usage: Self.usage)
            guard FirmwareSlotText.parseHash(rest[0]) != nil else { throw ValidationError("HASH must be 64 hex digits.") }
        }

        func run() async throws {
            let (device, rest) = try target.split(operands, expecting: 1...1, usage: Self.usage)
            let hash = FirmwareSlotText.parseHash(rest[0]) ?? []
            if let device {
                Output.line(FirmwareSlotText.table(try await target.runThroughDaemon(device: device, command: "test", hash: hash)))
            } else {
                Output.line(FirmwareSlotText.table(try target.runOverUDP { client throws(FirmwareTransportError) in try client.test(hash: hash) }))
            }
        }
    }

    /// `tether firmware confirm DEVICE [HASH]`, or `confirm --udp HOST:PORT [HASH]`.
    struct Confirm: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "confirm", abstract: "Confirm the running image (or make the image with HASH permanent).",
            discussion: "Without HASH the running image is confirmed: the safe choice once it has proved itself.")
        @OptionGroup var target: FirmwareTargetOptions
        @Argument(help: ArgumentHelp("The device tetherd serves (omit it with --udp), then optionally an image's hash (64 hex digits).", valueName: "device hash"))
        var operands: [String] = []

        static let usage = "tether firmware confirm DEVICE [HASH] | --udp HOST:PORT [HASH]"
        func validate() throws {
            let (_, rest) = try target.split(operands, expecting: 0...1, usage: Self.usage)
            if let hash = rest.first, FirmwareSlotText.parseHash(hash) == nil { throw ValidationError("HASH must be 64 hex digits.") }
        }

        func run() async throws {
            let (device, rest) = try target.split(operands, expecting: 0...1, usage: Self.usage)
            let hash = rest.first.flatMap(FirmwareSlotText.parseHash)
            if let device {
                Output.line(FirmwareSlotText.table(try await target.runThroughDaemon(device: device, command: "confirm", hash: hash)))
            } else {
                Output.line(FirmwareSlotText.table(try target.runOverUDP { client throws(FirmwareTransportError) in try client.confirm(hash: hash) }))
            }
        }
    }

    /// `tether firmware reset DEVICE`, or `reset --udp HOST:PORT`.
    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset", abstract: "Reset the device (MCUboot then swaps in an image marked for test or permanent).")
        @OptionGroup var target: FirmwareTargetOptions
        @Argument(help: ArgumentHelp("The device tetherd serves (serial or address); omit it with --udp.", valueName: "device"))
        var operands: [String] = []

        static let usage = "tether firmware reset DEVICE | --udp HOST:PORT"
        func validate() throws { _ = try target.split(operands, expecting: 0...0, usage: Self.usage) }

        func run() async throws {
            if let device = try target.split(operands, expecting: 0...0, usage: Self.usage).device {
                _ = try await target.runThroughDaemon(device: device, command: "reset")
            } else {
                try target.runOverUDP { client throws(FirmwareTransportError) in try client.reset() }
            }
        }
    }

    /// `tether firmware erase DEVICE`, or `erase --udp HOST:PORT`.
    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "erase", abstract: "Erase the device's secondary slot (refused while its image is pending or is the fallback).")
        @OptionGroup var target: FirmwareTargetOptions
        @Argument(help: ArgumentHelp("The device tetherd serves (serial or address); omit it with --udp.", valueName: "device"))
        var operands: [String] = []

        static let usage = "tether firmware erase DEVICE | --udp HOST:PORT"
        func validate() throws { _ = try target.split(operands, expecting: 0...0, usage: Self.usage) }

        func run() async throws {
            if let device = try target.split(operands, expecting: 0...0, usage: Self.usage).device {
                Output.line(FirmwareSlotText.table(try await target.runThroughDaemon(device: device, command: "erase")))
            } else {
                try target.runOverUDP { client throws(FirmwareTransportError) in try client.erase() }
            }
        }
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

    /// `FirmwareCommand`'s slot records (control-api.md, "Firmware commands") as an image state.
    static func state(_ records: [GatewayRecord]) -> SMPImageState {
        SMPImageState(images: records.map { record in
            var slot = SMPImageSlotState(
                image: UInt32(clamping: record.integer("image") ?? 0), slot: UInt32(clamping: record.integer("slot") ?? 0),
                version: record.string("version") ?? "?", hash: record.string("hash").flatMap(parseHash))
            slot.active = record.bool("active") ?? false
            slot.confirmed = record.bool("confirmed") ?? false
            slot.pending = record.bool("pending") ?? false
            slot.permanent = record.bool("permanent") ?? false
            slot.bootable = record.bool("bootable") ?? false
            return slot
        })
    }

    /// 64 hex digits → 32 bytes; nil otherwise.
    static func parseHash(_ text: String) -> [UInt8]? {
        // Hex.decode takes digits only: UInt8(_:radix:), used here before, also took a sign ("+f").
        guard text.utf8.count == 64 else { return nil }
        return Hex.decode(text)
    }
}
