import TetherPrimitives
// The handshake (§6, §11) and the device's identity and boots (§9.6).

extension LinkSession {
    var serial: String { deviceInfo?.serial ?? history.serial ?? "" }

    mutating func acceptDeviceInfo(_ info: DeviceInfo, frameVersion: UInt8, sequence: SequenceNumber, _ connection: inout Connection, at now: Timestamp, batch: inout BatchBuilder) -> LinkFate {
        // §6.1: the device chooses; its choice must lie in both ranges.
        guard configuration.versions.contains(frameVersion), info.versions.contains(frameVersion) else {
            sendNack(Nack(sequence: sequence, reason: .unsupportedVersion, detail: [configuration.versions.lowerBound, configuration.versions.upperBound]), &connection)
            return giveUp(&connection, .incompatibleVersions(device: info.versions))
        }
        if let previous = history.serial, previous != info.serial {
            actions.append(.report(.identityChanged(previous: previous, now: info.serial)))
            history = DeviceHistory()
            clock = DeviceClock()
            reportedConfig = nil
        }
        history.serial = info.serial
        deviceInfo = info
        noteBoot(info.bootCounter, serial: info.serial)
        connection.handshake = .established(version: frameVersion)
        actions.append(.report(.negotiated(version: frameVersion, info)))
        finishRequest(&connection)  // the HELLO is answered
        batch.add(.deviceInfo(info, negotiatedVersion: frameVersion), frame: sequence)
        connection.window.markInProgress(sequence)
        startTimeSyncBurst(&connection, at: now)
        enqueueRequest(.getConfig, &connection, at: now)
        return .kept
    }

    /// §9.6: a boot counter other than the latest one is a reboot (newer) or a late frame of an older boot.
    @discardableResult
    mutating func noteBoot(_ boot: UInt16, serial: String) -> Bool {
        guard let latest = history.latestBoot else {
            history.latestBoot = boot
            return true
        }
        guard SequenceNumber(latest).distance(to: SequenceNumber(boot)) > 0 else { return false }
        history.latestBoot = boot
        actions.append(.report(.rebootDetected(serial: serial, previousBoot: latest, boot: boot)))
        return true
    }
}
