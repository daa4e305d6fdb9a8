import DBus
import TetherDeviceModel
import Foundation
import LinkProtocol
import TetherPrimitives

/// GATT operations on the device's characteristics and descriptors, and the GATT objects exported while connected.
extension SimulatedDevice {
    // MARK: - GATT operations

    func cachedValue(_ role: SimulatedGattCharacteristic.Role) -> [UInt8] {
        switch role {
        case .rx: []
        case .tx: txValue
        case .alertLevel: [alertLevel]
        case .fixed(let bytes): bytes
        case .health(let uuid): healthValues[uuid] ?? []
        case .smp: smpValue
        }
    }

    /// ReadValue: like BlueZ, also announces the value as changed before replying.
    func readValue(_ role: SimulatedGattCharacteristic.Role, at characteristic: DBusObjectPath) throws -> [UInt8] {
        guard isConnected else { throw BlueZError.notConnected }
        let value: [UInt8]
        switch role {
        case .rx, .tx, .smp: throw BlueZError.notPermitted("Read not permitted")
        case .alertLevel: value = [alertLevel]
        case .fixed(let bytes): value = bytes
        case .health(let uuid): value = try readHealth(uuid)
        }
        emit(["Value": .bytes(value)], at: characteristic, interface: BlueZInterface.gattCharacteristic)
        return value
    }

    func writeValue(_ role: SimulatedGattCharacteristic.Role, _ bytes: [UInt8], type: String?, flags: [String])
        throws
    {
        guard isConnected else { throw BlueZError.notConnected }
        // BlueZ picks Write Request unless the type is "command" or only write-without-response is allowed.
        let withResponse = type == "request" || (type == nil && flags.contains("write"))
        if withResponse ? !flags.contains("write") : !flags.contains("write-without-response") {
            throw BlueZError.notSupported
        }
        switch role {
        case .rx:
            deliverToFirmware(bytes)
        case .alertLevel:
            guard bytes.count == 1 else { throw BlueZError.failed("Operation failed with ATT error: 0x0d") }
            alertLevel = bytes[0]
        case .tx, .fixed:
            throw BlueZError.notPermitted("Write not permitted")
        case .health(let uuid):
            try writeHealth(uuid, bytes)
        case .smp:
            smpWritten(bytes)
        }
    }

    func startNotify(sender: String) throws {
        startNotifyCalls += 1
        guard isConnected else { throw BlueZError.notConnected }
        guard notifySocket == nil else { throw BlueZError.notPermitted("Notify acquired") }
        guard !notifySessions.contains(sender) else { return }
        notifySessions.append(sender)
        if notifySessions.count == 1 { emit(["Notifying": .bool(true)], at: txPath) }
    }

    func stopNotify(sender: String) throws {
        guard let index = notifySessions.firstIndex(of: sender) else {
            throw BlueZError.failed("No notify session started")
        }
        notifySessions.remove(at: index)
        if notifySessions.isEmpty { emit(["Notifying": .bool(false)], at: txPath) }
    }

    /// The owner of StartNotify sessions left the bus.
    func clientVanished(_ name: String) {
        healthClientVanished(name)
        smpClientVanished(name)
        guard notifySessions.contains(name) else { return }
        try? stopNotify(sender: name)
    }

    func acquireNotify() throws -> (OwnedFileDescriptor, UInt16) {
        guard isConnected else { throw BlueZError.notConnected }
        if !pendingAcquireNotifyFailures.isEmpty { throw pendingAcquireNotifyFailures.removeFirst() }
        guard notifySocket == nil, notifySessions.isEmpty else { throw BlueZError.notPermitted("Notify acquired") }
        socketNumber += 1
        let (socket, clientEnd) = try SeqPacketSocket.makePair(id: socketNumber)
        notifySocket = socket
        emit(["NotifyAcquired": .bool(true)], at: txPath)
        watch(socket)
        return (clientEnd, link.mtu)
    }

    func acquireWrite() throws -> (OwnedFileDescriptor, UInt16) {
        guard isConnected else { throw BlueZError.notConnected }
        guard writeSocket == nil else { throw BlueZError.notPermitted("Write acquired") }
        socketNumber += 1
        let (socket, clientEnd) = try SeqPacketSocket.makePair(id: socketNumber)
        writeSocket = socket
        emit(["WriteAcquired": .bool(true)], at: rxPath)
        watch(socket)
        return (clientEnd, link.mtu)
    }

    func readDescriptor(_ role: SimulatedGattDescriptor.Role) throws -> [UInt8] {
        guard isConnected else { throw BlueZError.notConnected }
        return descriptorValue(role)
    }

    func descriptorValue(_ role: SimulatedGattDescriptor.Role) -> [UInt8] {
        switch role {
        case .clientConfiguration: (isNotifying || isNotifyAcquired) ? [0x01, 0x00] : [0x00, 0x00]
        case .healthClientConfiguration(let uuid): healthCCCDValue(uuid)
        case .smpClientConfiguration: (isSMPNotifying || isSMPNotifyAcquired) ? [0x01, 0x00] : [0x00, 0x00]
        case .fixed(let bytes): bytes
        }
    }


    // MARK: - Objects

    var txPath: DBusObjectPath { characteristicPath(role: .tx) }
    var rxPath: DBusObjectPath { characteristicPath(role: .rx) }

    /// Notifying: the TX sessions, or a health characteristic's own.
    func isNotifying(_ role: SimulatedGattCharacteristic.Role) -> Bool {
        if case .health(let uuid) = role { return !(healthNotifySessions[uuid] ?? []).isEmpty }
        if role == .smp { return isSMPNotifying }
        return isNotifying
    }

    func isNotifyAcquired(_ role: SimulatedGattCharacteristic.Role) -> Bool {
        if case .health(let uuid) = role { return healthNotifySockets[uuid] != nil }
        if role == .smp { return isSMPNotifyAcquired }
        return isNotifyAcquired
    }

    func isWriteAcquired(_ role: SimulatedGattCharacteristic.Role) -> Bool {
        role == .smp ? isSMPWriteAcquired : isWriteAcquired
    }

    func characteristicPath(role: SimulatedGattCharacteristic.Role) -> DBusObjectPath {
        for service in services {
            for characteristic in service.characteristics where characteristic.role == role {
                return characteristic.path(under: service.path(under: path))
            }
        }
        return path
    }

    /// Parent first: each service, then its characteristics, each followed by its descriptors.
    func exportGatt() async {
        for service in services {
            let servicePath = service.path(under: path)
            try? await connection.objectServer.export([service.interface(device: path)], at: servicePath)
            for characteristic in service.characteristics {
                let characteristicPath = characteristic.path(under: servicePath)
                try? await connection.objectServer.export(
                    [characteristic.interface(service: servicePath, path: characteristicPath, device: self)],
                    at: characteristicPath)
                for descriptor in characteristic.descriptors {
                    try? await connection.objectServer.export(
                        [descriptor.interface(characteristic: characteristicPath, device: self)],
                        at: descriptor.path(under: characteristicPath))
                }
            }
        }
    }

    func unexportGatt() {
        guard gattExported else { return }
        gattExported = false
        for service in services.reversed() {
            let servicePath = service.path(under: path)
            for characteristic in service.characteristics.reversed() {
                let characteristicPath = characteristic.path(under: servicePath)
                for descriptor in characteristic.descriptors.reversed() {
                    connection.objectServer.unexport(descriptor.path(under: characteristicPath))
                }
                connection.objectServer.unexport(characteristicPath)
            }
            connection.objectServer.unexport(servicePath)
        }
    }

    func emit(
        _ changed: [String: DBusValue], at objectPath: DBusObjectPath? = nil, interface: String? = nil
    ) {
        let target = objectPath ?? path
        let name = interface ?? (objectPath == nil ? BlueZInterface.device : BlueZInterface.gattCharacteristic)
        try? connection.objectServer.emitPropertiesChanged(path: target, interface: name, changed: changed)
    }
}
