import BlueZ
import BlueZSimulator
import DBus
import LinkProtocol
import Synchronization
import Testing
import TetherTestSupport

@Suite(.serialized)
struct DeviceTests {
    @Test func connectReturnsWithTheLinkUpAndServicesResolveAfterwards() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover()
            let device = harness.firstDevice
            let signals = try await harness.recordSignals()
            try await device.connect(timeout: .seconds(30))
            // BlueZ's order: Connected=true before the Connect reply.
            try await signals.waitFor("Connected=true") {
                $0.changes("Connected", to: .bool(true), at: BlueZHarness.firstDevice)
            }
            try await device.waitUntil(connected: true, timeout: .seconds(30))
            try await device.waitUntilServicesResolved(timeout: .seconds(30))
            let properties = try await device.properties()
            #expect(properties.connected && properties.servicesResolved)
            // Connecting again is a no-op, not an error.
            try await device.connect(timeout: .seconds(30))
        }
    }

    @Test func disconnectFollowsBlueZsOrder() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover()
            let device = harness.firstDevice
            try await device.connect()
            try await device.waitUntilServicesResolved()
            let signals = try await harness.recordSignals()
            let disconnections = Recorder(try await device.disconnections())
            try await device.disconnect()
            let path = BlueZHarness.firstDevice
            try await signals.waitFor("Connected=false") { $0.changes("Connected", to: .bool(false), at: path) }
            let order = signals.elements.compactMap { signal -> String? in
                if signal.changes("ServicesResolved", to: .bool(false), at: path) { return "ServicesResolved=false" }
                if signal.member == "Disconnected" && signal.path == path { return "Disconnected" }
                if signal.changes("Connected", to: .bool(false), at: path) { return "Connected=false" }
                return nil
            }
            #expect(order == ["ServicesResolved=false", "Disconnected", "Connected=false"])
            try await disconnections.waitFor("Disconnected signal") { $0.reason == "org.bluez.Reason.Local" }
            try await device.waitUntil(connected: false, timeout: .seconds(30))
            // Disconnecting a disconnected device is not an error.
            try await device.disconnect()
        }
    }

    @Test func waitsAreBounded() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover()
            let started = ContinuousClock.now
            await #expect(throws: BlueZError.timeout) {
                try await harness.firstDevice.waitUntil(connected: true, timeout: .milliseconds(200))
            }
            await #expect(throws: BlueZError.timeout) {
                try await harness.firstDevice.waitUntilServicesResolved(timeout: .milliseconds(200))
            }
            #expect(ContinuousClock.now - started < .seconds(3))
        }
    }

    /// StartNotify through the wire-protocol connection (what the gateway uses): the session belongs to that
    /// connection's bus name, values arrive in order, ending the stream calls StopNotify, and Notifying=false
    /// (the link dropping) finishes a stream.
    @Test func startNotifyOverTheWireConnection() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover()
            try await harness.firstDevice.connect()
            try await harness.firstDevice.waitUntilServicesResolved()
            let wire = try await DBusWireConnection.connect(to: .address(harness.bus.address))
            let session = BlueZSession(connection: harness.connection, notifications: wire)
            let tx = GattCharacteristic(session: session, path: BlueZHarness.tx)
            let rx = GattCharacteristic(session: session, path: BlueZHarness.rx)

            let first = try await tx.startNotify()
            #expect(try await tx.properties()["Notifying"] == .bool(true))
            try await rx.writeValue(BlueZHarness.hello, type: .command)
            let frame = try await firstFrame(from: first)
            #expect(frame.header.type == MessageType.deviceInfo.rawValue)
            // Ending the stream (cancelling the task that iterates it) ends the notify session: StopNotify.
            let ending = Task { for await _ in first {} }
            ending.cancel()
            await ending.value
            try await waitUntil("Notifying=false after StopNotify", seconds: 30) {
                try await tx.properties()["Notifying"] == .bool(false)
            }

            let second = try await tx.startNotify()
            try await harness.firstDevice.disconnect()
            try await waitUntilFinished(second)
            await wire.close()
        }
    }

    @Test func connectFailureFaultsMapToTypedErrors() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover()
            let device = harness.firstDevice
            let target: DBusValue = .objectPath(BlueZHarness.firstDevice)
            try await harness.inject(
                "connect-failure", ["error": .string("abort"), "count": .uint32(1), "device": target])
            await #expect(throws: BlueZError.failed("le-connection-abort-by-local")) {
                try await device.connect(timeout: .seconds(5))
            }
            try await harness.inject(
                "connect-failure", ["error": .string("in-progress"), "count": .uint32(1), "device": target])
            await #expect(throws: BlueZError.inProgress) {
                try await device.connect(timeout: .seconds(5))
            }
            // The faults are used up: the next connect works.
            try await device.connect(timeout: .seconds(30))
        }
    }

    /// BlueZ reports an ATT error it has no name for as Failed "Operation failed with ATT error: 0x%02x" (src/gatt-client.c,
    /// create_gatt_dbus_error): the RACP client needs the code (0xFE procedure already in progress, 0xFD CCCD improperly
    /// configured; Core Supplement Part B §1.2).
    @Test func attErrorCodesAreReadFromBlueZsFailedMessage() {
        func map(_ name: String, _ message: String) -> BlueZError { BlueZError(DBusError(name: name, message: message)) }
        #expect(map("org.bluez.Error.Failed", "Operation failed with ATT error: 0xfe").attErrorCode == 0xFE)
        #expect(map("org.bluez.Error.Failed", "Operation failed with ATT error: 0xfd").attErrorCode == 0xFD)
        #expect(map("org.bluez.Error.Failed", "le-connection-abort-by-local").attErrorCode == nil)
        #expect(map("org.bluez.Error.NotPermitted", "Not paired").attErrorCode == nil)
        #expect(map("org.bluez.Error.Failed", "Operation failed with ATT error: 0x").attErrorCode == nil)
    }

    @Test func errorNamesMapInOnePlace() {
        func map(_ name: String, _ message: String = "m") -> BlueZError {
            BlueZError(DBusError(name: name, message: message))
        }
        #expect(map("org.bluez.Error.InProgress") == .inProgress)
        let abort = "le-connection-abort-by-local"
        #expect(map("org.bluez.Error.Failed", abort) == .failed(abort))
        #expect(map("org.bluez.Error.NotPermitted", "Read not permitted") == .notPermitted("Read not permitted"))
        #expect(map("org.bluez.Error.NotAuthorized") == .notAuthorized)
        #expect(map("org.bluez.Error.NotSupported") == .notSupported)
        #expect(map("org.bluez.Error.InvalidArguments") == .invalidArguments)
        #expect(map("org.bluez.Error.AlreadyConnected") == .alreadyConnected)
        #expect(map("org.bluez.Error.DoesNotExist") == .doesNotExist)
        #expect(map("org.bluez.Error.AuthenticationFailed") == .authenticationFailed)
        #expect(map("org.bluez.Error.AuthenticationCanceled") == .authenticationCanceled)
        #expect(map("org.bluez.Error.ConnectionAttemptFailed") == .connectionAttemptFailed)
        #expect(map("org.freedesktop.DBus.Error.NoReply") == .timeout)
        #expect(map("org.freedesktop.DBus.Error.UnknownObject") == .dbus(DBusError(.unknownObject, "")))
        let unknown = "org.bluez.Error.SomethingNew"
        #expect(map(unknown) == .dbus(DBusError(name: unknown, message: "")))
    }
}

@Suite(.serialized)
struct GattTests {
    /// MTU − 3 − 2, at least 20, and never over 510: bluetoothd 5.66's GATT server silently refuses a Write Command
    /// whose value is 511 or 512 bytes (GattCharacteristic.largestWrittenValue).
    @Test func theLargestValueWrittenStaysWithinWhatBlueZ566Takes() {
        #expect(GattCharacteristic.maximumValueLength(mtu: 23) == 20)
        #expect(GattCharacteristic.maximumValueLength(mtu: 247) == 242)
        #expect(GattCharacteristic.maximumValueLength(mtu: 515) == 510)
        #expect(GattCharacteristic.maximumValueLength(mtu: 517) == 510)
        #expect(GattCharacteristic.maximumValueLength(mtu: 65535) == 510)
    }

    @Test func helloOverAcquireWriteAndDeviceInfoOverAcquireNotify() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover()
            try await harness.firstDevice.connect()
            try await harness.firstDevice.waitUntilServicesResolved()
            let tx = GattCharacteristic(session: harness.session, path: BlueZHarness.tx)
            let rx = GattCharacteristic(session: harness.session, path: BlueZHarness.rx)
            #expect(try await tx.mtu() == 247)
            #expect(try await tx.maximumValueLength() == 242)

            let source = NotificationSource()
            let subscription = try await source.subscribe(to: tx, of: BlueZHarness.firstDevice)
            #expect(subscription.method == .acquireNotify)
            #expect(subscription.mtu == 247)
            #expect(await source.method(for: BlueZHarness.firstDevice) == .acquireNotify)

            let writer = try await rx.acquireWrite()
            #expect(writer.maximumValueLength == 242)
            try await writer.send(BlueZHarness.hello)
            let frame = try await firstFrame(from: subscription.values)
            #expect(frame.header.type == MessageType.deviceInfo.rawValue)
            writer.close()
            // The link drops: BlueZ closes the socket and the stream finishes.
            try await harness.firstDevice.disconnect()
            try await waitUntilFinished(subscription.values)
        }
    }

    @Test func startNotifyIsTheFallbackWhenAcquireNotifyIsRefused() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover()
            try await harness.firstDevice.connect()
            try await harness.firstDevice.waitUntilServicesResolved()
            // Another client's StartNotify session makes BlueZ refuse AcquireNotify ("Notify acquired").
            let other = try await DBusConnection.connect(to: .address(harness.bus.address))
            do {
                _ = try await BlueZSession(connection: other).call(
                    BlueZHarness.tx, BlueZInterfaceName.gattCharacteristic, "StartNotify")
            } catch {
                await other.close()
                throw error
            }

            let tx = GattCharacteristic(session: harness.session, path: BlueZHarness.tx)
            let rx = GattCharacteristic(session: harness.session, path: BlueZHarness.rx)
            let source = NotificationSource()
            let subscription = try await source.subscribe(to: tx, of: BlueZHarness.firstDevice)
            #expect(subscription.method == .startNotify)
            #expect(await source.method(for: BlueZHarness.firstDevice) == .startNotify)
            await other.close()

            try await rx.writeValue(BlueZHarness.hello, type: .command)
            let frame = try await firstFrame(from: subscription.values)
            #expect(frame.header.type == MessageType.deviceInfo.rawValue)

            // Remembered: the next subscription for this device goes straight to StartNotify.
            let again = try await source.subscribe(to: tx, of: BlueZHarness.firstDevice)
            #expect(again.method == .startNotify)
            // The link drops: Notifying=false finishes the streams.
            try await harness.firstDevice.disconnect()
            try await waitUntilFinished(subscription.values)
            try await waitUntilFinished(again.values)
        }
    }

    @Test func writeRequestAndReadValue() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover()
            try await harness.firstDevice.connect()
            try await harness.firstDevice.waitUntilServicesResolved()
            let alert = GattCharacteristic(session: harness.session, path: BlueZHarness.alertLevel)
            try await alert.writeValue([2], type: .request)
            #expect(try await alert.readValue() == [2])
            // The device answers a bad length with an ATT error, mapped to .failed with BlueZ's text.
            await #expect(throws: BlueZError.failed("Operation failed with ATT error: 0x0d")) {
                try await alert.writeValue([1, 2], type: .request)
            }
            let tx = GattCharacteristic(session: harness.session, path: BlueZHarness.tx)
            await #expect(throws: BlueZError.notPermitted("Read not permitted")) {
                try await tx.readValue()
            }
        }
    }
}

/// Answers pairing questions like a technician at the CLI would.
final class ScriptedAgent: AgentDelegate {
    let passkey: Mutex<UInt32?>
    let asked = Mutex<[DBusObjectPath]>([])

    init(passkey: UInt32?) {
        self.passkey = Mutex(passkey)
    }

    func requestPasskey(device: DBusObjectPath) async -> UInt32? {
        asked.withLock { $0.append(device) }
        return passkey.withLock { $0 }
    }

    func displayPasskey(device: DBusObjectPath, passkey: UInt32, entered: UInt16) async {}

    func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool {
        asked.withLock { $0.append(device) }
        return passkey == 123456
    }
}

@Suite(.serialized)
struct AgentTests {
    @Test func passkeyPairingThroughTheAgent() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover(BlueZHarness.passkeyDevice)
            let delegate = ScriptedAgent(passkey: 111_111)
            let agent = try await Agent.register(
                session: harness.session, capability: .keyboardOnly, delegate: delegate)
            let device = Device(session: harness.session, path: BlueZHarness.passkeyDevice)

            // A wrong passkey fails authentication.
            await #expect(throws: BlueZError.authenticationFailed) { try await device.pair() }
            #expect(try await device.properties().paired == false)

            // Rejecting (no answer) is reported by BlueZ as a rejected authentication.
            delegate.passkey.withLock { $0 = nil }
            await #expect(throws: BlueZError.authenticationRejected) { try await device.pair() }

            delegate.passkey.withLock { $0 = 123456 }
            try await device.pair()
            try await device.setTrusted(true)
            let properties = try await device.properties()
            #expect(properties.paired && properties.bonded && properties.trusted)
            #expect(delegate.asked.withLock { $0 } == Array(repeating: BlueZHarness.passkeyDevice, count: 3))
            await #expect(throws: BlueZError.alreadyExists) { try await device.pair() }
            try await agent.unregister()
        }
    }

    @Test func confirmationPairingThroughTheAgent() async throws {
        try await BlueZHarness.with { harness in
            let third: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_03"
            try await harness.discover(third)
            let delegate = ScriptedAgent(passkey: nil)
            _ = try await Agent.register(session: harness.session, capability: .displayYesNo, delegate: delegate)
            let device = Device(session: harness.session, path: third)
            try await device.pair()
            #expect(try await device.properties().paired)
            #expect(delegate.asked.withLock { $0 } == [third])
        }
    }
}

/// Never answers (the technician walked away).
final class SilentAgent: AgentDelegate {
    func requestPasskey(device: DBusObjectPath) async -> UInt32? {
        try? await Task.sleep(for: .seconds(30))
        return 123456
    }

    func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool { false }
}

@Suite(.serialized)
struct AgentTimeoutTests {
    @Test func anUnansweredQuestionIsCanceledInTime() async throws {
        try await BlueZHarness.with { harness in
            try await harness.discover(BlueZHarness.passkeyDevice)
            _ = try await Agent.register(
                session: harness.session, capability: .keyboardOnly, answerTimeout: .milliseconds(200),
                delegate: SilentAgent())
            let device = Device(session: harness.session, path: BlueZHarness.passkeyDevice)
            let started = ContinuousClock.now
            await #expect(throws: BlueZError.authenticationCanceled) { try await device.pair() }
            // The agent's 200 ms answer timeout ended it, not pair()'s own 60 s: any bound well under 60 s shows
            // that; 5 s was missed (5.35 s) when the whole suite loaded the 2 cores.
            #expect(ContinuousClock.now - started < .seconds(30))
            #expect(try await device.properties().paired == false)
        }
    }
}
