import SMP
import TetherFirmware
import TetherGateway
import TetherStore

/// The control API's `FirmwareCommand` (docs/specs/control-api.md, "Firmware commands"): one MCUmgr image command on
/// an adopted device over BLE — list its slots, mark an image for test, confirm, reset, erase the secondary slot —
/// through the same SMP client core as an update and as `tether firmware ... --udp`. tetherd owns the radio, so a
/// technician's command goes through it like an update does (docs/design/ota.md, "tetherd owns the radio").
///
///  1. The device is held for the command (Gateway+Holds: its sessions lose the link meanwhile; a device already held,
///     by an update or another command, is busy) and released whatever happens.
///  2. A device with an unfinished update in the journal is refused (busy), even one no update holds now (tetherd
///     resumes it at its next start): its slots belong to that update until it ends.
///  3. The command runs on the held device's current connection, connecting it when it has none (the transport's
///     Device1.Connect, bounded by `connectWithin`); each request is bounded by the SMP session's time-out and retries.
///  4. test, confirm and erase answer the device's state after the command (erase with one more read: Zephyr's erase
///     answers nothing but its result); reset answers nothing: the device reboots and, once released, its sessions
///     connect it again.
public struct FirmwareDeviceCommands: Sendable {
    public enum Command: Hashable, Sendable {
        case list
        case test(hash: [UInt8])
        case confirm(hash: [UInt8]?)
        case reset
        case erase
    }

    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// Rules 1 and 2: nothing was sent.
        case busy(String)
        case gateway(GatewayError)
        case store(StoreError)
        /// The device refused the command, did not answer, or its link could not be had.
        case device(FirmwareTransportError)

        public var description: String {
            switch self {
            case .busy(let reason): reason
            case .gateway(let error): error.description
            case .store(let error): "\(error)"
            case .device(let error): error.description
            }
        }
    }

    public let gateway: Gateway
    public let journal: FirmwareUpdateJournal
    public var settings: SMPBluetoothSession.Settings
    public var connectWithin: Duration = .seconds(30)

    public init(gateway: Gateway, journal: FirmwareUpdateJournal, settings: SMPBluetoothSession.Settings = .init()) {
        self.gateway = gateway
        self.journal = journal
        self.settings = settings
    }

    /// Runs `command` on `device` (serial or address); the device's state after it (nil for reset).
    public func run(_ command: Command, device: String) async throws(Failure) -> SMPImageState? {
        guard let address = await gateway.device(device)?.address else { throw .gateway(.unknownDevice(device)) }
        let hold: DeviceHold
        do {
            hold = try await gateway.hold(address, for: "firmware \(command.name)")
        } catch {
            if case .busy(let reason) = error { throw .busy(reason) }
            throw .gateway(error)
        }
        let result = await held(hold, command, address: address)
        await gateway.release(hold)
        return try result.get()
    }

    private func held(_ hold: DeviceHold, _ command: Command, address: String) async -> Result<SMPImageState?, Failure> {
        // Rule 2, under the hold: an update that begins now is refused by the hold; one journaled before is seen here.
        do {
            if let update = try journal.unfinished().first(where: { $0.address == address }) {
                return .failure(.busy("\(address) has an unfinished firmware update (\(update.uid), \(update.phase.rawValue))"))
            }
        } catch {
            return .failure(.store(error))
        }
        let transport = FirmwareBluetoothTransport(bluez: gateway.bluez, device: hold.devicePath, settings: settings)
        do {
            return .success(try await Self.perform(command, over: transport, within: connectWithin))
        } catch {
            return .failure(.device(error))
        }
    }

    /// Rules 3 and 4.
    private static func perform(_ command: Command, over transport: FirmwareBluetoothTransport, within limit: Duration)
        async throws(FirmwareTransportError) -> SMPImageState?
    {
        let session: SMPBluetoothSession
        do {
            session = try await transport.session()
        } catch {
            // No connection (or none that serves SMP yet): connect it, bounded (FirmwareBluetoothTransport.reconnect).
            try await transport.reconnect(within: limit)
            session = try await transport.session()
        }
        switch command {
        case .list: return try await session.imageState()
        case .test(let hash): return try await session.test(hash: hash)
        case .confirm(let hash): return try await session.confirm(hash: hash)
        case .reset:
            try await session.reset()
            return nil
        case .erase:
            try await session.erase()
            return try await session.imageState()
        }
    }
}

extension FirmwareDeviceCommands.Command {
    /// The control API's name of the command.
    public var name: String {
        switch self {
        case .list: "list"
        case .test: "test"
        case .confirm: "confirm"
        case .reset: "reset"
        case .erase: "erase"
        }
    }
}
