import TetherPrimitives
// Frames in (decoding, and the rules per frame) and frames out (§3, §4, §5).

extension LinkSession {
    // MARK: - Decoding

    mutating func decodeBuffered(_ connection: inout Connection, at now: Timestamp) -> LinkFate {
        var batch = BatchBuilder()
        var ackDue = false
        while true {
            do {
                guard let frame = try connection.decoder.decode() else { break }
                // A frame that gives the link up leaves the rest of the buffer, the batch and the ACK undone.
                guard handle(frame, &connection, at: now, batch: &batch, ackDue: &ackDue) == .kept else { return .givenUp }
            } catch {
                reject(error, &connection)
            }
        }
        if !batch.isEmpty { submit(batch, &connection) }
        if ackDue { sendAck(&connection) }
        // §3.4: a partial frame must complete within the stall timeout.
        if connection.decoder.bufferedByteCount > 0 {
            actions.append(.armTimer(.stall, at: now.advanced(by: configuration.stallTimeout)))
            connection.stallArmed = true
        } else if connection.stallArmed {
            actions.append(.cancelTimer(.stall))
            connection.stallArmed = false
        }
        flushWrites(&connection)
        return .kept
    }

    /// Bytes that were not a frame: NACK what can be named, report the rest (§3.3, §4.3).
    mutating func reject(_ error: FrameError, _ connection: inout Connection) {
        var nack: Nack?
        if let sequence = error.sequence, let reason = error.nackReason {
            let named = Nack(sequence: sequence, reason: reason)
            sendNack(named, &connection)
            nack = named
        }
        actions.append(.report(.rejected(error, nack: nack)))
    }

    private mutating func handle(_ frame: Frame, _ connection: inout Connection, at now: Timestamp, batch: inout BatchBuilder, ackDue: inout Bool) -> LinkFate {
        let header = frame.header
        let sequence = header.sequence
        let consumesSequence = MessageType.consumesDeviceSequence(typeCode: header.type)

        // A rejection the device must not retry (§8.5 "releases it") still has to free its slot in the window,
        // or the cumulative ACK would stop at it forever (§6.6).
        func release(_ reason: NackReason, _ error: FrameError) {
            let nack = Nack(sequence: sequence, reason: reason, detail: reason == .unsupportedVersion ? [configuration.versions.lowerBound, configuration.versions.upperBound] : [])
            sendNack(nack, &connection)
            actions.append(.report(.rejected(error, nack: nack)))
            if consumesSequence, connection.window.classify(sequence) == .new {
                connection.window.markHandled(sequence)
                ackDue = true
            }
        }

        let message: LinkMessage
        do {
            message = try LinkMessage(frame: frame)
        } catch {
            release(error.nackReason ?? .malformed, error)
            return .kept
        }
        guard message.type.isSentByDevice else {
            release(.malformed, FrameError(.malformed, sequence: sequence, type: header.type, reason: "\(message.type) is sent by the gateway, not the device"))
            return .kept
        }
        if case .established(let version) = connection.handshake, header.version != version {
            // §6.5: every frame after the handshake carries the negotiated version.
            release(.unsupportedVersion, FrameError(.malformed, sequence: sequence, type: header.type, reason: "frame of version \(header.version) on a version-\(version) link"))
            return .kept
        }

        if message.type.isReliable {
            let classification = connection.window.classify(sequence)
            if classification == .inProgress || classification == .handled, case .configData(let config) = message {
                actions.append(.report(.settings(.configDataRepeated(config, sequence: sequence))))
            }
            switch classification {
            case .new:
                break
            case .inProgress:
                // A retransmission of a frame being stored: ACKed when the store completes (§8.8).
                actions.append(.report(.repeatedFrame(sequence)))
                return .kept
            case .handled:
                ackDue = true  // our ACK was lost; say it again (§8.3)
                actions.append(.report(.repeatedFrame(sequence)))
                return .kept
            case .outOfWindow:
                sendNack(Nack(sequence: sequence, reason: .outOfWindow), &connection)
                return .kept
            }
        }

        switch (connection.handshake, message) {
        case (.hello, .deviceInfo(let info)):
            return acceptDeviceInfo(info, frameVersion: header.version, sequence: sequence, &connection, at: now, batch: &batch)
        case (.hello, .nack(let nack)):
            return handleNack(nack, &connection, at: now)
        case (.hello, .hitEvent), (.hello, .batteryStatus), (.hello, .sleep), (.hello, .configData):
            sendNack(Nack(sequence: sequence, reason: .busy), &connection)  // §11: not before the handshake
        case (.hello, .timeSyncResponse):
            break  // no request of ours can be outstanding yet
        case (.established, .deviceInfo(let info)):
            // A new DEVICE_INFO inside a connection: store it again and notice a reboot (§9.6).
            noteBoot(info.bootCounter, serial: info.serial)
            deviceInfo = info
            batch.add(.deviceInfo(info, negotiatedVersion: header.version), frame: sequence)
            connection.window.markInProgress(sequence)
        case (.established, .hitEvent(let hit)):
            acceptHit(hit, version: header.version, sequence: sequence, &connection, at: now, batch: &batch, ackDue: &ackDue)
        case (.established, .batteryStatus(let status)):
            accept(.battery(serial: serial, status, receivedAt: now), sequence: sequence, &connection, batch: &batch)
        case (.established, .sleep(let notice)):
            accept(.sleep(serial: serial, notice, receivedAt: now), sequence: sequence, &connection, batch: &batch)
        case (.established, .configData(let config)):
            actions.append(.report(.settings(.configDataReceived(config, sequence: sequence))))
            reportedConfig = config
            accept(.reportedConfig(serial: serial, config), sequence: sequence, &connection, batch: &batch)
            completeConfigRequest(&connection, at: now)
        case (.established, .timeSyncResponse(let response)):
            acceptTimeSyncResponse(response, &connection, at: now)
        case (.established, .nack(let nack)):
            return handleNack(nack, &connection, at: now)
        case (_, .hello), (_, .ack), (_, .timeSyncRequest), (_, .getConfig), (_, .setConfig):
            break  // unreachable: gateway-only types were rejected above
        }
        return .kept
    }

    // MARK: - Output

    mutating func send(_ message: LinkMessage, sequence: SequenceNumber, flags: FrameFlags = [], _ connection: inout Connection) {
        let version: UInt8
        switch (connection.handshake, message) {
        case (_, .hello), (.hello, _):
            version = ProtocolVersion.helloHeaderVersion  // §6.2
        case (.established(let negotiated), _):
            version = negotiated
        }
        message.append(version: version, sequence: sequence, flags: flags, to: &connection.outgoing)
    }

    /// §3.1: the frames of this step leave as few ATT values as the MTU allows.
    mutating func flushWrites(_ connection: inout Connection) {
        guard !connection.outgoing.isEmpty else { return }
        for segment in FrameEncoder.segments(of: connection.outgoing, valueSize: connection.valueSize) {
            actions.append(.write(segment))
        }
        connection.outgoing.removeAll(keepingCapacity: true)
    }
}
