import BlueZ
import DBus

/// A device lent to one exclusive user for a while: a firmware update (issue 16) takes the radio link from the
/// device's peripheral sessions and gives it back. Returned by `Gateway.hold`; `Gateway.release` ends it.
public struct DeviceHold: Sendable, Hashable {
    public let address: String
    public let devicePath: DBusObjectPath
    /// What holds the device, for people (`GatewayDevice.heldFor`).
    public let purpose: String
    /// Tells this hold from an earlier one of the same device: a late release of a hold that ended releases nothing.
    let number: UInt64
}

/// Holding devices (docs/design/ota.md, "tetherd owns the radio").
///
///  1. While a device is held its peripheral sessions have no link: the one up is ended for them (as a drop is:
///     subscriptions released, the Tether link's commits in flight still finish and ACK), a set-up in progress is
///     cancelled, and no session is handed a later connection. The device keeps what it has not been ACKed.
///  2. The supervisor still wants the device and keeps it connected under its rules (after the reset of an update
///     it reconnects it, as the holder may too: Device1.Connect on a connected device counts as success).
///  3. `release` hands the current connection to the sessions again, set up as any new link is (services resolved
///     again: an update may have changed them).
///  4. One hold per device: a second is `busy` and names the first's purpose. Only an adopted device can be held:
///     the supervisor keeps no other connected.
extension Gateway {
    /// The BlueZ session the holder talks through: the gateway's own bus connection.
    public nonisolated var bluez: BlueZSession { session }

    public func hold(_ serialOrAddress: String, for purpose: String) throws(GatewayError) -> DeviceHold {
        guard running, !shuttingDown else { throw .unavailable("the gateway is not running") }
        guard let address = resolve(serialOrAddress) else { throw .unknownDevice(serialOrAddress) }
        guard wanted.contains(address) else { throw .notPermitted("\(serialOrAddress) is not adopted by this gateway") }
        if let held = holds[address] { throw .busy("\(serialOrAddress) is held for \(held.purpose)") }
        nextHoldNumber += 1
        let hold = DeviceHold(address: address, devicePath: adapter.devicePath(address: address), purpose: purpose, number: nextHoldNumber)
        holds[address] = hold
        // Rule 1.
        linkSetups.removeValue(forKey: address)?.cancel()
        linkSetupNumbers[address] = nil
        standardLinksUp.remove(address)
        sessions[address]?.linkDown()
        for session in otherSessions[address, default: [:]].values { session.linkDown() }
        markDirty(address)
        return hold
    }

    /// Rule 3. A hold that already ended (or never was) releases nothing.
    public func release(_ hold: DeviceHold) async {
        guard holds[hold.address]?.number == hold.number else { return }
        holds[hold.address] = nil
        markDirty(hold.address)
        guard !shuttingDown, wanted.contains(hold.address), await driver.connectedAddresses.contains(hold.address) else { return }
        // Connected still (the await above may have seen a new hold taken meanwhile: then that one has the link).
        guard holds[hold.address] == nil, linkSetups[hold.address] == nil else { return }
        if rebondPending.contains(hold.address) {
            rebond(hold.address)
        } else {
            startLink(hold.address)
        }
    }
}
