import DBus
import TetherDeviceModel
import Foundation
import LinkProtocol
import TetherPrimitives

/// The device model behind the link: hits, reboots, injected faults, and the notification sockets.
extension SimulatedDevice {
    // MARK: - Firmware and link

    /// Control surface: the user takes `count` hits.
    func recordHits(_ count: Int) -> Int {
        var recorded = 0
        for index in 0..<count {
            let now = WallClock.now()
            let (event, actions) = firmware.recordHit(
                durationMilliseconds: UInt16(800 + index % 1200), intensity: UInt8(40 + index % 60), at: now)
            if event != nil { recorded += 1 }
            apply(actions)
        }
        return recorded
    }

    /// Power cycle: the firmware reboots and a live link drops (remote side).
    func reboot() async {
        firmware.reboot(at: WallClock.now())
        // A power cycle resets the SMP server too: MCUboot does its swap, an upload in RAM is gone.
        smp?.withDevice { $0.reset() }
        if isConnected { await dropLink(reason: ("org.bluez.Reason.Remote", "Connection terminated by remote user")) }
    }

    func failNextConnects(with error: DBusError, count: Int) {
        pendingConnectFailures += Array(repeating: error, count: max(count, 0))
    }

    func failNextAcquireNotifies(with error: DBusError, count: Int) {
        pendingAcquireNotifyFailures += Array(repeating: error, count: max(count, 0))
    }

    func deliverToFirmware(_ bytes: [UInt8]) {
        writesReceived += 1
        apply(firmware.received(bytes, at: WallClock.now()))
    }

    func apply(_ actions: [DeviceAction]) {
        for action in actions {
            switch action {
            case .notify(let value): outbox.append(value)
            case .disconnect: Task { await self.remoteDisconnect() }
            case .released(let events):
                releasedLog?.append(events, address: configuration.address, serial: configuration.serial)
                releasedEvents += events
            case .settings(let fact): settingsFacts.append(fact)
            }
        }
    }

    /// One connection event per interval (LinkModel): the firmware timer, the random-disconnect fault, and up to
    /// `notificationsPerEvent` notifications.
    ///
    /// Events keep to the interval's grid (each deadline one interval after the last, not after the last event's work
    /// and the timer's lateness), so the link carries what the model says it does. An event that comes late is never
    /// made up for: the grid starts again from now, so a loaded machine (the test suite's parallel run) gets fewer
    /// events, not bursts of them.
    func runLink(number: UInt64) async {
        let interval = link.connectionInterval
        var next = ContinuousClock.now + interval
        while !Task.isCancelled {
            try? await Task.sleep(until: next)
            guard !Task.isCancelled, isConnected, connectionNumber == number else { return }
            await connectionEvent(interval: interval)
            next += interval
            let now = ContinuousClock.now
            if next <= now { next = now + interval }
        }
    }

    func connectionEvent(interval: Duration) async {
        let now = WallClock.now()
        if let deadline = firmware.nextDeadline, deadline <= now {
            apply(firmware.handleTimeout(at: now))
        }
        if randomDisconnectMeanMilliseconds > 0 {
            let p = Double(interval.nanoseconds) / (Double(randomDisconnectMeanMilliseconds) * 1e6)
            if random.chance(p) {
                await remoteDisconnect()
                return
            }
        }
        let count = link.unthrottled ? outbox.count : min(outbox.count, max(link.notificationsPerEvent, 1))
        // The SMP characteristic's notifications share the event with the TX's, after them.
        let smpBudget = max(link.notificationsPerEvent, 1) - count
        let batch = outbox.prefix(count)
        outbox.removeFirst(count)
        for value in batch {
            if random.chance(dropProbability) {
                notificationsDropped += 1
                continue
            }
            sendNotification(value)
            if random.chance(duplicateProbability) { sendNotification(value) }
        }
        _ = await smpConnectionEvent(budget: smpBudget, writeBudget: link.unthrottled ? .max : max(link.notificationsPerEvent, 1))
        await healthConnectionEvent()
    }

    /// Benchmark stream: `count` HIT_EVENT frames (valid link-protocol frames, one per notification, sequence
    /// numbers counting up) straight to the subscribers, bypassing the firmware. Throttled by the link model
    /// unless it is `unthrottled`; then an AcquireNotify socket that is full is waited for (nothing is dropped)
    /// and the bus is given a turn every 64 notifications. Returns how many were sent.
    func streamNotifications(_ count: Int) async -> Int {
        guard isConnected, notifySocket != nil || !notifySessions.isEmpty else { return 0 }
        var sent = 0
        for index in 0..<count {
            let hit = HitEvent(
                eventSequence: UInt32(truncatingIfNeeded: index), bootCounter: 1, ticks: UInt32(truncatingIfNeeded: index * 32),
                durationMilliseconds: 900, intensity: 50)
            let value = LinkMessage.hitEvent(hit).frame(version: 1, sequence: SequenceNumber(UInt16(truncatingIfNeeded: index)))
            guard link.unthrottled else {
                outbox.append(value)
                sent += 1
                continue
            }
            txValue = value
            if let socket = notifySocket {
                while !socket.send(value) {
                    guard isConnected, notifySocket === socket, socket.isWritableSoon() else { return sent }
                    await Task.yield()
                }
            }
            for _ in notifySessions {
                emit(["Value": .bytes(value)], at: txPath, interface: BlueZInterface.gattCharacteristic)
            }
            notificationsSent += 1
            sent += 1
            if index % 64 == 63 { await Task.yield() }
        }
        return sent
    }

    /// To the AcquireNotify socket (one packet per notification) and as Value PropertiesChanged, once per
    /// StartNotify session. With neither, the CCCD is off and the device's notification goes nowhere.
    func sendNotification(_ value: [UInt8]) {
        txValue = value
        notifySocket?.send(value)
        for _ in notifySessions {
            emit(["Value": .bytes(value)], at: txPath, interface: BlueZInterface.gattCharacteristic)
        }
        if notifySocket != nil || !notifySessions.isEmpty { notificationsSent += 1 }
    }

    func watch(_ socket: SeqPacketSocket) {
        Task { [weak self] in
            for await event in socket.events {
                switch event {
                case .packet(let bytes): await self?.socketPacket(bytes, from: socket.id)
                case .closed: await self?.socketClosed(socket.id)
                }
            }
        }
    }

    func socketPacket(_ bytes: [UInt8], from id: UInt64) {
        if smpSocketPacket(bytes, from: id) { return }
        guard writeSocket?.id == id, isConnected else { return }
        deliverToFirmware(bytes)
    }

    func socketClosed(_ id: UInt64) {
        if healthSocketClosed(id) { return }
        if smpSocketClosed(id) { return }
        if notifySocket?.id == id {
            notifySocket = nil
            emit(["NotifyAcquired": .bool(false)], at: txPath)
        } else if writeSocket?.id == id {
            writeSocket = nil
            emit(["WriteAcquired": .bool(false)], at: rxPath)
        }
    }

    func closeSockets(announce: Bool) {
        if let socket = notifySocket {
            socket.shutDown()
            notifySocket = nil
            if announce { emit(["NotifyAcquired": .bool(false)], at: txPath) }
        }
        if let socket = writeSocket {
            socket.shutDown()
            writeSocket = nil
            if announce { emit(["WriteAcquired": .bool(false)], at: rxPath) }
        }
    }
}
