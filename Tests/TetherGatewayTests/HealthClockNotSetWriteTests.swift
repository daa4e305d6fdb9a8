import HealthProfiles
import Synchronization
import Testing
@testable import TetherGateway

/// `HealthClockNotSetWrite` watches a connection's values from the first one, before the rest of the set-up has
/// armed the write (HealthSession forwards each hot stream as soon as it is subscribed): evidence seen early waits
/// for the write, and the write starts once per connection.
struct HealthClockNotSetWriteTests {
    /// BLS v1.1.1 §3.1.1: flags bit 1 (time stamp present), 120/80/93 mmHg, then a Date Time whose year, month and
    /// day 0 say "not known" (GSS, Date Time); the same reading stamped 2026-11-28 10:00:00.
    static let pressures: [UInt8] = [0x78, 0x00, 0x50, 0x00, 0x5D, 0x00]
    static let clockNotSet: [UInt8] = [0x02] + pressures + [0, 0, 0, 0, 0, 0, 0]
    static let clockSet: [UInt8] = [0x02] + pressures + [0xEA, 0x07, 11, 28, 10, 0, 0]
    static let bloodPressure = HealthCharacteristic.bloodPressureMeasurement.rawValue

    @Test func evidenceSeenBeforeTheWriteIsArmedStartsItWhenArmed() {
        let gate = HealthClockNotSetWrite(watching: true)
        gate.received(characteristic: Self.bloodPressure, bytes: Self.clockSet)
        gate.received(characteristic: Self.bloodPressure, bytes: Self.clockNotSet)
        let writes = Mutex<[TimeWritePolicy.ClockNotSetEvidence]>([])
        gate.arm { evidence in writes.withLock { $0.append(evidence) } }
        #expect(writes.withLock { $0 } == [.dateNotKnown])
        gate.received(characteristic: Self.bloodPressure, bytes: Self.clockNotSet)
        #expect(writes.withLock { $0 } == [.dateNotKnown], "once per connection")
    }

    @Test func evidenceAfterArmingStartsTheWriteOnce() {
        let gate = HealthClockNotSetWrite(watching: true)
        let writes = Mutex<[TimeWritePolicy.ClockNotSetEvidence]>([])
        gate.arm { evidence in writes.withLock { $0.append(evidence) } }
        gate.received(characteristic: Self.bloodPressure, bytes: Self.clockSet)
        #expect(writes.withLock { $0 }.isEmpty, "a stamped reading says nothing wrong")
        gate.received(characteristic: Self.bloodPressure, bytes: Self.clockNotSet)
        gate.received(characteristic: Self.bloodPressure, bytes: Self.clockNotSet)
        #expect(writes.withLock { $0 } == [.dateNotKnown])
    }

    @Test func aClockWrittenAlreadyIsNotWrittenAgain() {
        let gate = HealthClockNotSetWrite(watching: false)
        gate.received(characteristic: Self.bloodPressure, bytes: Self.clockNotSet)
        let writes = Mutex<[TimeWritePolicy.ClockNotSetEvidence]>([])
        gate.arm { evidence in writes.withLock { $0.append(evidence) } }
        gate.received(characteristic: Self.bloodPressure, bytes: Self.clockNotSet)
        #expect(writes.withLock { $0 }.isEmpty)
    }
}
