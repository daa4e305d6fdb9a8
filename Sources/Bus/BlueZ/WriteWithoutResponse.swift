/// Write Without Response (an ATT Write Command, Core v5.3 Vol 3 Part F §3.4.5.3) to one characteristic, the way
/// BlueZ offers it (doc/gatt-api.txt): an AcquireWrite socket, one value per packet and no D-Bus call per value, when
/// BlueZ grants one; otherwise `WriteValue` with type "command", which works everywhere. Shared by every writer in
/// the gateway (the Tether link's RX, MCUmgr's SMP characteristic).
public enum WriteWithoutResponse: Sendable {
    case socket(WriteAcquisition)
    case characteristic(GattCharacteristic, maximumValueLength: Int)

    /// AcquireWrite first; WriteValue where BlueZ refuses it (older BlueZ, no fd passing: the refusals after which
    /// NotificationSource falls back to StartNotify). Returns the MTU too: AcquireWrite's, or else the
    /// characteristic's MTU property.
    public static func open(_ characteristic: GattCharacteristic, timeout: Duration = BlueZSession.defaultTimeout) async throws
        -> (writer: WriteWithoutResponse, mtu: Int)
    {
        do {
            let acquisition = try await characteristic.acquireWrite(timeout: timeout)
            return (.socket(acquisition), acquisition.mtu)
        } catch let error as BlueZError where NotificationSource.fallsBack(error) {
            let mtu = try await characteristic.mtu()
            return (.characteristic(characteristic, maximumValueLength: GattCharacteristic.maximumValueLength(mtu: mtu)), mtu)
        }
    }

    /// The largest value per write (MTU − 3 − the safety margin).
    public var maximumValueLength: Int {
        switch self {
        case .socket(let acquisition): acquisition.maximumValueLength
        case .characteristic(_, let length): length
        }
    }

    /// Writes one value of at most `maximumValueLength` bytes.
    public func write(_ value: [UInt8]) async throws {
        switch self {
        case .socket(let acquisition): try await acquisition.send(value)
        case .characteristic(let characteristic, _): try await characteristic.writeValue(value, type: .command)
        }
    }

    /// Closes the socket (BlueZ ends the acquisition); nothing to release for WriteValue.
    public func close() {
        if case .socket(let acquisition) = self { acquisition.close() }
    }
}
