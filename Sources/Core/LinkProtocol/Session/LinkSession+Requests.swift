import TetherPrimitives
// The gateway's requests (§8.7): HELLO, GET_CONFIG and SET_CONFIG, one at a time, retried on the request timer;
// and the settings the gateway wants on the device (§7.11).

extension LinkSession {
    mutating func enqueueRequest(_ message: LinkMessage, _ connection: inout Connection, at now: Timestamp) {
        connection.queuedRequests.append(message)
        if connection.request == nil { sendNextRequest(&connection, at: now) }
    }

    private mutating func sendNextRequest(_ connection: inout Connection, at now: Timestamp) {
        guard connection.request == nil, !connection.queuedRequests.isEmpty else { return }
        startRequest(connection.queuedRequests.removeFirst(), &connection, at: now)
    }

    mutating func startRequest(_ message: LinkMessage, _ connection: inout Connection, at now: Timestamp) {
        let sequence = connection.allocateSequence()
        connection.request = OutstandingRequest(
            message: message, sequence: sequence, attempts: 1, acceptedAtSend: connection.window.accepted)
        send(message, sequence: sequence, &connection)
        if case .setConfig(let config) = message {
            actions.append(.report(.settings(.setConfigSent(config, sequence: sequence, attempt: 1))))
        }
        actions.append(.armTimer(.request, at: now.advanced(by: configuration.requestTimeout)))
    }

    mutating func retryRequest(_ connection: inout Connection, at now: Timestamp) -> LinkFate {
        guard var request = connection.request else { return .kept }
        // §8.7: a busy device is not an unresponsive one. The answer is a reliable frame and queues behind the
        // device's full window (§8.6), which moves only as the gateway stores and ACKs what fills it. So an
        // attempt during which the device's stream moved, or while its window held frames only the gateway can
        // release (a store in progress, a refused store the device will resend), is repeated but not counted.
        // Retransmissions and busy-NACKed frames do not count as progress: they show the device is alive, not
        // that the answer can ever come, and must not hold a link open forever.
        let busy = connection.window.accepted != request.acceptedAtSend || connection.window.waitsOnGateway
        if !busy {
            guard request.attempts < configuration.requestAttempts else {
                return giveUp(&connection, .unresponsive(request.message.type))
            }
            request.attempts += 1
        }
        request.acceptedAtSend = connection.window.accepted
        connection.request = request
        send(request.message, sequence: request.sequence, flags: .retransmit, &connection)
        if case .setConfig(let config) = request.message {
            actions.append(.report(.settings(.setConfigSent(config, sequence: request.sequence, attempt: request.attempts))))
        }
        actions.append(.armTimer(.request, at: now.advanced(by: configuration.requestTimeout)))
        return .kept
    }

    mutating func finishRequest(_ connection: inout Connection) {
        guard connection.request != nil else { return }
        connection.request = nil
        actions.append(.cancelTimer(.request))
    }

    /// A NACK from the device names a request of ours, a TIME_SYNC_REQUEST, or something it no longer waits on.
    mutating func handleNack(_ nack: Nack, _ connection: inout Connection, at now: Timestamp) -> LinkFate {
        actions.append(.report(.nackReceived(nack)))
        guard let request = connection.request, request.sequence == nack.sequence else {
            timeSyncRequestRefused(nack, &connection, at: now)
            return .kept
        }
        switch (request.message, nack.reason) {
        case (.hello, .unsupportedVersion):
            let device = nack.detail.count >= 2 && nack.detail[0] <= nack.detail[1] ? nack.detail[0]...nack.detail[1] : 0...0
            return giveUp(&connection, .incompatibleVersions(device: device))
        case (_, .badCRC), (_, .truncated):
            return retryRequest(&connection, at: now)  // §8.5: our frame was damaged in transit; resend at once
        case (_, .busy), (_, .outOfWindow), (_, .storageFull):
            break  // the request timer resends it
        case (_, .unknownType), (_, .malformed), (_, .invalidValue), (_, .unsupportedVersion):
            finishRequest(&connection)  // §8.5: the device will never accept this request; do not repeat it
            sendNextRequest(&connection, at: now)
        }
        return .kept
    }

    // MARK: - Settings (§7.11)

    mutating func completeConfigRequest(_ connection: inout Connection, at now: Timestamp) {
        if let request = connection.request {
            switch request.message {
            case .getConfig, .setConfig:
                finishRequest(&connection)
            default:
                break
            }
        }
        applyDesiredConfigIfNeeded(&connection, at: now)
        sendNextRequest(&connection, at: now)
    }

    /// Sends SET_CONFIG when the device reports another version than the desired one (§7.11).
    mutating func applyDesiredConfigIfNeeded(_ connection: inout Connection, at now: Timestamp) {
        guard let desired = desiredConfig, let reported = reportedConfig, reported.version != desired.version else { return }
        let alreadyAsked = connection.queuedRequests.contains(.setConfig(desired)) || connection.request?.message == .setConfig(desired)
        guard !alreadyAsked else { return }
        enqueueRequest(.setConfig(desired), &connection, at: now)
    }

    struct OutstandingRequest: Sendable {
        var message: LinkMessage
        var sequence: SequenceNumber
        /// Attempts that counted toward the limit (§8.7): sent while the device was not busy.
        var attempts: Int
        /// `ReceiveWindow.accepted` when the request was last sent: a change shows the device's stream moved.
        var acceptedAtSend: UInt64
    }
}
