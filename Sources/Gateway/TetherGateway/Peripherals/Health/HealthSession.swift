import BlueZ
import HealthProfiles
import Synchronization
import TetherPrimitives
import TetherStore

/// The hot lane's I/O for a standard health device: on every connection, every measurement characteristic the
/// device's health services offer is subscribed before anything else happens (a value sent before the
/// subscription is lost: bleak #374), indicate-only ones with StartNotify (bluetoothd confirms each indication),
/// and every value goes to the sink in arrival order with its time of receipt.
///
/// A device that offers a health service but none of its measurements is refused at set-up: nothing it could send
/// would reach the gateway.
///
/// The cold lane's I/O too: when the sink has one (`records`) and a service keeps keyed records behind a Record
/// Access Control Point (Glucose, CGM), the session subscribes the control point after the measurements and runs a
/// `RecordTransferDriver` for it; that service's record values (and their companions) go to the driver, not to
/// the sink, so the cold lane alone stores them: in order, in the right epoch, once.
///
/// Consent on a multi-user device (docs/design/health.md, "Multi-user scales: User Data Service consent"): when the
/// device offers the User Data Service's User Control Point and the gateway holds consent codes for its address,
/// the session subscribes the control point after every measurement (so nothing the device sends on consent is
/// missed) and runs a `UserConsentDriver`: one Consent per user, one at a time. The device then sends that user's
/// stored measurements, which the hot lane stores with their User ID as the sample's user index.
///
/// No value the device sent is dropped on the gateway's side (docs/design/health.md, "A hot stream is drained"):
/// bluetoothd confirms each indication as it arrives, whatever its D-Bus clients do, and a cuff may forget a stored
/// reading once it is confirmed. So each hot-lane stream is forwarded from the moment it is subscribed, not once the
/// whole set-up is done (a later step may fail, and the link be abandoned), and when the link ends each is read to
/// its end (`drainGrace`), the sink hearing `linkEnded` only after its last value.
final class HealthSession: PeripheralSession {
    let kind = PeripheralKind.health
    private let address: String
    private let sink: any HealthValueSink
    private let clock: GatewayClock
    private let forwarding = Mutex<Forwarding?>(nil)

    /// What carries the current link's values and facts (from the start of its set-up), ended with it.
    private struct Forwarding {
        var link: UInt64
        /// One task per hot-lane stream, forwarding to the sink: each is read to its end when the link ends.
        var streams: [Task<Void, Never>] = []
        /// Tasks that end with the link at once: the cold lane's and consent's inputs, the consent procedure. A
        /// record the cold lane then misses was outside a procedure (RecordTransfer rule 4): the device still holds
        /// it, and the next connection's request takes it.
        var others: [Task<Void, Never>] = []
        var drivers: [AsyncStream<RecordTransferDriver.Event>.Continuation] = []
    }

    /// How long a hot stream is still read after its link ended, for values bluetoothd sent before it said so (the
    /// link's end and the values travel on different D-Bus connections, in no fixed order between them). A stream
    /// normally ends sooner: with `Notifying` false, or its socket's end.
    static let drainGrace: Duration = .seconds(5)
    /// What the device offered on its latest link (kept after the link ends, for `ListHealthDevices`).
    private let offered = Mutex<HealthOffer?>(nil)

    /// The health services a device offered on its latest link, and those whose records the cold lane reads.
    struct HealthOffer: Hashable, Sendable {
        var services: [HealthService]
        var recordServices: [HealthService]
    }

    var offer: HealthOffer? { offered.withLock { $0 } }

    /// The current link (from the start of its set-up to its end) and when the gateway wrote the device's clock on
    /// it and switched both lanes to the new facts, nil when it did not (`ListHealthDevices`' `clock_written_at`).
    private let clockLink = Mutex<(link: UInt64, clockWrittenAt: Timestamp?, writing: Bool)?>(nil)
    var clockWrittenAt: Timestamp? { clockLink.withLock { $0?.clockWrittenAt } }

    /// The time-write policy (tetherd's `[health] write_device_time`).
    private let timeWrite: TimeWritePolicy.Mode
    /// This device's records may be deleted from it once the backend acknowledged them (tetherd's
    /// `[health] delete_acknowledged_records`; RecordTransfer rule 7).
    private let deletesAcknowledgedRecords: Bool
    /// This device's memory is checked for records that vanished (tetherd's `[health] audit_vanished_records`;
    /// RecordTransfer rule 8).
    private let auditsVanishedRecords: Bool

    /// The users to consent to on this device (tetherd's `[health] consent_codes_file`); empty: no Consent written.
    private let userConsents: [UserConsentProcedure.Credential]
    /// What the session reports as it goes (GatewayTrace): RACP deletions of acknowledged records, UDS consents.
    private let trace: (@Sendable (GatewayTrace) -> Void)?

    init(
        address: String, sink: any HealthValueSink, clock: GatewayClock, timeWrite: TimeWritePolicy.Mode = .whenClockNotSet,
        deletion: HealthDevicePolicy = .off, audit: HealthDevicePolicy = .off, userConsents: [UserConsentProcedure.Credential] = [], trace: (@Sendable (GatewayTrace) -> Void)? = nil
    ) {
        self.address = address
        self.sink = sink
        self.clock = clock
        self.timeWrite = timeWrite
        deletesAcknowledgedRecords = deletion.allows(address)
        auditsVanishedRecords = audit.allows(address)
        self.userConsents = userConsents
        self.trace = trace
    }

    /// The User Data Service's User Control Point (service 0x181C, characteristic 0x2A9F; UDS v1.0 §3.4: write with
    /// response, indicate), when the device offers it writable and subscribable.
    static func userControlPoint(in services: [GattService]) -> GattService.Characteristic? {
        guard let service = services.first(where: { $0.assignedNumber == 0x181C }),
            let controlPoint = service.characteristic("2A9F"), controlPoint.canSubscribe, controlPoint.flags.contains("write")
        else { return nil }
        return controlPoint
    }

    /// The characteristics to subscribe on this device: each offered health service's subscribed characteristics
    /// that the device actually has (optional ones may be missing), with the service they belong to.
    static func subscriptions(in services: [GattService]) -> [(HealthService, HealthService.Subscribed, GattService.Characteristic)] {
        var result: [(HealthService, HealthService.Subscribed, GattService.Characteristic)] = []
        for service in services {
            guard let number = service.assignedNumber, let health = HealthService(assignedNumber: number) else {
                continue
            }
            for wanted in health.subscribed {
                guard let characteristic = service.characteristic(Hex.uppercase4(wanted.uuid)), characteristic.canSubscribe else { continue }
                result.append((health, wanted, characteristic))
            }
        }
        return result
    }

    /// The services whose stored records the cold lane takes over RACP on this device: a service with keyed
    /// records (RecordArrival: Glucose, CGM) that offers its records' characteristic and a Record Access Control
    /// Point (0x2A52) it can write and subscribe to.
    static func recordStreams(in services: [GattService]) -> [(HealthService, GattService.Characteristic)] {
        services.compactMap { service in
            guard let number = service.assignedNumber, let health = HealthService(assignedNumber: number), health.storesRecords,
                let keyed = health.keyedRecords, service.characteristic(Hex.uppercase4(keyed.records.rawValue)) != nil,
                let controlPoint = service.characteristic(Hex.uppercase4(HealthService.recordAccessControlPoint)),
                controlPoint.canSubscribe, controlPoint.flags.contains("write")
            else { return nil }
            return (health, controlPoint)
        }
    }

    func linkUp(_ link: PeripheralLink) async throws {
        let wanted = Self.subscriptions(in: link.services)
        guard !wanted.isEmpty else {
            throw GatewayError.notPermitted("\(link.device.path) offers a health service but none of its measurements")
        }
        // The records of a service the cold lane reads come through StartNotify, as its control point's indications
        // do: both then arrive on one D-Bus connection in the order bluetoothd received them (the link's ATT order),
        // which the transfer relies on to tell a record of an answer from one that came after it. An AcquireNotify
        // socket is another path with a delay of its own.
        let coldServices = sink.records == nil ? [] : Set(Self.recordStreams(in: link.services).map(\.0))
        var services: [HealthService] = []
        for (service, _, _) in wanted where !services.contains(service) { services.append(service) }
        // The device's clock, and the time-write policy (docs/design/health.md, "The time-write rule"): a write
        // allowed at once is made before any value can arrive, so both lanes start with the facts after it; one that
        // must wait for the cold lane is made by the gate below, which then switches both lanes' facts.
        clockLink.withLock { $0 = (link.number, nil, false) }
        if let previous = forwarding.withLock({ current in defer { current = Forwarding(link: link.number) }; return current }) {
            end(previous)
        }
        let readFacts = await Self.readClock(link, at: clock)
        let writer = HealthClockWriter(link: link, mode: timeWrite, clock: clock)
        var facts = readFacts
        var writeAfterColdLane = false
        if case .write(_, let reason) = writer.decide(readFacts) {
            let stored = HealthClockWriter.storedRecords(offered: services, coldLane: coldServices)
            switch TimeWriteMoment.moment(for: reason, storedRecords: stored) {
            case .atOnce:
                if let after = await writer.write(over: readFacts) {
                    facts = after
                    let writtenAt = self.clock.linkNow()
                    clockLink.withLock { $0?.clockWrittenAt = writtenAt }
                }
            case .afterStoredRecordsTaken: writeAfterColdLane = true
            case .withheld: break
            }
        }
        await sink.linkStarted(address: address, link: link.number, clock: facts)
        offered.withLock { $0 = HealthOffer(services: services, recordServices: services.filter(coldServices.contains)) }
        // TimeWriteMoment rule 1 from the values: a measurement saying the clock is not set, unless written already.
        // Watching from the first value; the write itself is armed once the set-up is done (below).
        let clockNotSetWrite = HealthClockNotSetWrite(watching: clockWrittenAt == nil)
        let (address, sink, clock, number) = (address, sink, clock, link.number)
        // The records of a cold-lane service (and their companions), forwarded once the cold lane is set up: to
        // its driver, or to the sink when its lane could not start.
        var recordStreams: [(HealthService, UInt16, NotificationBatches)] = []
        for (service, subscribed, characteristic) in wanted {
            let isRecord = coldServices.contains(service)
                && (service.keyedRecords.map { ([$0.records] + $0.companions).contains { $0.rawValue == subscribed.uuid } } ?? false)
            let subscription = try await link.notificationSource.subscribe(
                to: GattCharacteristic(session: link.session, path: characteristic.path), of: link.device.path,
                timeout: link.timeout, allowingStartNotify: link.notifyPreference != .acquireOnly || isRecord,
                indicatesOnly: characteristic.indicatesOnly || isRecord)
            if isRecord {
                recordStreams.append((service, subscribed.uuid, subscription.values))
                continue
            }
            // Forwarded from now on: a device may send (and, for an indication, see confirmed) as soon as its CCCD
            // is written, and a later step of this set-up may still fail.
            let (uuid, values) = (subscribed.uuid, subscription.values)
            keep(stream: Task {
                for await batch in values {
                    for bytes in batch {
                        clockNotSetWrite.received(characteristic: uuid, bytes: bytes)
                        await sink.received(HealthCharacteristicValue(
                            address: address, link: number, service: service, characteristic: uuid, bytes: bytes,
                            receivedAt: clock.linkNow()))
                    }
                }
            }, on: number)
        }
        // The cold lane, once every measurement is subscribed: the control point's indications, then one driver per
        // records-bearing service, started from the committed cursor (docs/design/health.md, "The cold lane").
        var cold: [HealthService: (continuation: AsyncStream<RecordTransferDriver.Event>.Continuation, driver: RecordTransferDriver, inbox: AsyncStream<RecordTransferDriver.Event>)] = [:]
        var indications: [(HealthService, NotificationBatches)] = []
        let lateWrite = HealthLateClockWrite()
        if let records = sink.records {
            for (service, controlPoint) in Self.recordStreams(in: link.services) {
                guard let keyed = service.keyedRecords, let keys = RecordArrival.keyKind(of: keyed.records) else { continue }
                let context = HealthRecordStreamContext(
                    address: address, link: link.number, service: service, characteristic: keyed.records, keys: keys, clock: facts)
                guard let cursor = await records.committedCursor(of: context) else { continue }
                let characteristic = GattCharacteristic(session: link.session, path: controlPoint.path)
                // RACP is write + indicate (GLS §3.4, CGMS §3.6): StartNotify, bluetoothd confirming each indication.
                let subscription = try await link.notificationSource.subscribe(
                    to: characteristic, of: link.device.path, timeout: link.timeout, allowingStartNotify: true,
                    indicatesOnly: controlPoint.indicatesOnly)
                indications.append((service, subscription.values))
                let (inbox, continuation) = AsyncStream.makeStream(of: RecordTransferDriver.Event.self)
                let configuration = RecordAccessConfiguration(
                    keys: keys, asksForCountFirst: true, seed: UInt64.random(in: .min ... .max))
                let driver = RecordTransferDriver(
                    context: context, controlPoint: characteristic, writeTimeout: link.timeout, configuration: configuration,
                    cursor: cursor, records: records, values: sink, clock: clock, events: continuation,
                    deletesAcknowledgedRecords: deletesAcknowledgedRecords, auditsVanishedRecords: auditsVanishedRecords,
                    ended: { ending in lateWrite.procedureEnded(service, ending) },
                    deletionReported: { [trace] report in trace?(.healthRecordDeletion(report)) },
                    auditReported: { [trace] report in trace?(.healthRecordAudit(report)) })
                cold[service] = (continuation, driver, inbox)
            }
        }
        // Consent, once every measurement is subscribed (a scale sends a user's stored measurements on that user's
        // consent): the User Control Point's indications first (UDS v1.0 §3.4: the server answers every request with an
        // indication, and refuses a write whose CCCD is off with ATT 0xFD), then one Consent per configured user.
        var consent: (driver: UserConsentDriver, inbox: AsyncStream<UserConsentDriver.Event>, indications: NotificationBatches)?
        if !userConsents.isEmpty, let controlPoint = Self.userControlPoint(in: link.services) {
            let characteristic = GattCharacteristic(session: link.session, path: controlPoint.path)
            let (trace, address) = (trace, address)
            do {
                let subscription = try await link.notificationSource.subscribe(
                    to: characteristic, of: link.device.path, timeout: link.timeout, allowingStartNotify: true,
                    indicatesOnly: controlPoint.indicatesOnly)
                let (inbox, continuation) = AsyncStream.makeStream(of: UserConsentDriver.Event.self)
                let driver = UserConsentDriver(
                    credentials: userConsents, controlPoint: characteristic, writeTimeout: link.timeout, clock: clock,
                    events: continuation,
                    report: { userIndex, outcome in trace?(.userConsent(address: address, userIndex: userIndex, outcome)) })
                consent = (driver, inbox, subscription.values)
            } catch {
                // No answer could be heard, so nothing is written; the readings of no known user still arrive, so the
                // link stays up. Each user is reported failed, and the next connection tries again.
                for user in userConsents {
                    trace?(.userConsent(address: address, userIndex: user.userIndex, .failed(.indicationsUnavailable)))
                }
            }
        }
        // A write after the connection's start, for both lanes at its answer: the hot lane by time of receipt, each
        // driver in its inbox's order (behind every value that arrived before). Once per link, whichever rule asks
        // first; only on the link that asked (after a reconnection the device path is the same, and that link reads
        // the clock and decides for itself).
        let coldDrivers = cold.values.map(\.continuation)
        let writeLater: @Sendable (TimeWritePolicy.ClockNotSetEvidence?) -> Void = {
            [weak self, sink, address, clock, number = link.number] evidence in
            guard self?.claimClockWrite(on: number) == true else { return }
            Task {
                let after = await writer.write(over: readFacts, evidence: evidence)
                guard let after, self?.isCurrentLink(number) == true else {
                    self?.releaseClockWrite(on: number, writtenAt: nil)
                    return
                }
                let at = clock.linkNow()
                await sink.clockChanged(address: address, link: number, clock: after, at: at)
                for driver in coldDrivers { driver.yield(.clockChanged(after)) }
                self?.releaseClockWrite(on: number, writtenAt: at)
            }
        }
        // TimeWriteMoment rule 3: the write waits for every cold-lane service's first procedure to take every stored
        // record; a records-bearing service whose lane could not start (its cursor unreadable) withholds it.
        if writeAfterColdLane, !cold.isEmpty, Set(cold.keys) == coldServices {
            lateWrite.arm(awaiting: Set(cold.keys)) { writeLater(nil) }
        }
        clockNotSetWrite.arm { evidence in writeLater(evidence) }
        var tasks: [Task<Void, Never>] = []
        for (service, characteristic, values) in recordStreams {
            let routed = cold[service]?.continuation
            let task = Task {
                for await batch in values {
                    for bytes in batch {
                        let value = HealthCharacteristicValue(
                            address: address, link: number, service: service, characteristic: characteristic,
                            bytes: bytes, receivedAt: clock.linkNow())
                        clockNotSetWrite.received(characteristic: characteristic, bytes: bytes)
                        if let routed { routed.yield(.value(value)) } else { await sink.received(value) }
                    }
                }
            }
            // A records-bearing service whose cold lane could not start sends its records to the hot lane.
            if routed == nil { keep(stream: task, on: number) } else { tasks.append(task) }
        }
        for (service, values) in indications {
            guard let continuation = cold[service]?.continuation else { continue }
            tasks.append(Task {
                for await batch in values {
                    for bytes in batch { continuation.yield(.indication(bytes)) }
                }
            })
        }
        if let consent {
            let (driver, inbox, indications) = consent
            tasks.append(Task {
                for await batch in indications {
                    for bytes in batch { driver.events.yield(.indication(bytes)) }
                }
            })
            // Ends with the link: its task is cancelled with the others, and the procedure hears the link went down.
            tasks.append(Task {
                var running = driver
                await running.run(inbox)
            })
        }
        for entry in cold.values {
            let (driver, inbox) = (entry.driver, entry.inbox)
            // Not cancelled with the link: it ends on the link-down fact, after a store in flight completes.
            Task {
                var running = driver
                await running.run(inbox)
            }
        }
        let drivers = cold.values.map(\.continuation)
        let kept = forwarding.withLock { current in
            guard current?.link == number else { return false }
            current?.others += tasks
            current?.drivers += drivers
            return true
        }
        // The link ended during the set-up: what was started for it ends now.
        if !kept { end(Forwarding(link: number, others: tasks, drivers: drivers), reportingEnd: false) }
    }

    /// Keeps a hot-lane stream's task with link `number`, or, when that link has ended meanwhile, lets it read
    /// what its stream still holds and stop.
    private func keep(stream task: Task<Void, Never>, on number: UInt64) {
        let kept = forwarding.withLock { current in
            guard current?.link == number else { return false }
            current?.streams.append(task)
            return true
        }
        if !kept { task.cancel() }
    }

    /// Ends what carried a link: its cold-lane drivers hear the link went down, its other tasks stop, and its hot
    /// streams are read to their ends (their own, or `drainGrace` after now; a cancelled stream still yields what
    /// it holds) before the sink hears the link ended.
    private func end(_ ended: Forwarding, reportingEnd: Bool = true) {
        ended.others.forEach { $0.cancel() }
        ended.drivers.forEach { $0.yield(.linkDown); $0.finish() }
        let (sink, address, clock, streams) = (sink, address, clock, ended.streams)
        Task {
            let grace = Task {
                do { try await clock.sleep(Self.drainGrace) } catch { return }
                streams.forEach { $0.cancel() }
            }
            for stream in streams { await stream.value }
            grace.cancel()
            if reportingEnd { await sink.linkEnded(address: address, link: ended.link) }
        }
    }

    private func isCurrentLink(_ number: UInt64) -> Bool {
        clockLink.withLock { $0?.link == number }
    }

    /// Takes the right to write the clock on link `number`: false when another link is current, the clock was
    /// written on this one already, or a write is under way.
    private func claimClockWrite(on number: UInt64) -> Bool {
        clockLink.withLock { current in
            guard current?.link == number, current?.clockWrittenAt == nil, current?.writing == false else { return false }
            current?.writing = true
            return true
        }
    }

    /// The write claimed on `number` ended: written at `writtenAt`, or not (nil: a later rule may try again).
    private func releaseClockWrite(on number: UInt64, writtenAt: Timestamp?) {
        clockLink.withLock { current in
            guard current?.link == number else { return }
            current?.writing = false
            if let writtenAt { current?.clockWrittenAt = writtenAt }
        }
    }

    /// Current Time Service (0x1805, CTS v1.1 §3.1/§3.2): the device's clock read now, beside the gateway's clock at
    /// the answer, and its Local Time Information. A device without the service, or a read that fails, leaves what
    /// is unknown unknown; the derivation then says so in each reading's time basis.
    static func readClock(_ link: PeripheralLink, at clock: GatewayClock) async -> DeviceClockFacts {
        var facts = DeviceClockFacts()
        guard let service = link.service("1805") else { return facts }
        if let characteristic = service.characteristic("2A0F"), characteristic.flags.contains("read"),
            let bytes = try? await GattCharacteristic(session: link.session, path: characteristic.path).readValue(timeout: link.timeout),
            let information = try? LocalTimeInformation.decode(bytes)
        {
            facts.setting = .localTime(information)
        }
        if let characteristic = service.characteristic("2A2B"), characteristic.flags.contains("read"),
            let bytes = try? await GattCharacteristic(session: link.session, path: characteristic.path).readValue(timeout: link.timeout),
            let current = try? CurrentTime.decode(bytes)
        {
            facts.reading = DeviceClockFacts.Reading(
                deviceTime: current.dateTime, fractions256: current.fractions256, receivedAt: clock.linkNow())
        }
        return facts
    }

    /// Runs the cold lane now on every records-bearing service of the current link (RecordTransfer rule 6) and
    /// waits for each procedure's end. Nil when no link is up or it reads no records over RACP.
    func backfill() async -> [HealthBackfillResult]? {
        guard let drivers = forwarding.withLock({ $0?.drivers }), !drivers.isEmpty else { return nil }
        var results: [HealthBackfillResult] = []
        for driver in drivers {
            results.append(await withCheckedContinuation { (answer: CheckedContinuation<HealthBackfillResult, Never>) in
                // The driver answers exactly once (RecordTransferDriver.Event.backfill); an inbox already finished
                // drops the event, so then this answers.
                if case .terminated = driver.yield(.backfill({ answer.resume(returning: $0) })) {
                    answer.resume(returning: HealthBackfillResult(
                        service: "", outcome: "link-down", reason: "the link to the device ended", recordsStored: 0,
                        cursorEpoch: 0, cursorLast: nil))
                }
            })
        }
        return results
    }

    func linkDown() {
        clockLink.withLock { $0 = nil }
        guard let ended = forwarding.withLock({ current in defer { current = nil }; return current }) else { return }
        end(ended)
    }

    func drain() async {}

    func finish() {
        linkDown()
    }
}
