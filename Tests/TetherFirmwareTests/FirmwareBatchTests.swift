import Testing
import TetherFirmware

/// Several devices in one update (FirmwareBatch's rules 1-4).
@Suite struct FirmwareBatchTests {
    @Test func everyDeviceUpdatedIsExitZero() {
        var batch = FirmwareBatch(devices: 3, maxFailures: 1)
        for _ in 0..<3 {
            #expect(batch.goesOn)
            batch.record(.updated)
        }
        #expect(!batch.goesOn)
        #expect(batch.exitStatus == 0)
        #expect(batch.summary == "3 devices: 3 updated")
    }

    /// Rules 2 and 3: a revert counts as a failure, and the limit leaves the rest untouched.
    @Test func theLimitStopsTheBatchAndARevertCounts() {
        var batch = FirmwareBatch(devices: 4, maxFailures: 2)
        batch.record(.updated)
        batch.record(.reverted)
        #expect(batch.goesOn)
        batch.record(.reverted)
        #expect(!batch.goesOn)
        #expect(batch.notTried == 1)
        #expect(batch.exitStatus == 6)
        #expect(batch.summary == "4 devices: 1 updated, 2 reverted, 1 not tried (stopped after 2 failures)")
    }

    /// Rule 4: any other failure makes it 1, whatever reverted beside it.
    @Test func aFailureOtherThanARevertIsExitOne() {
        var batch = FirmwareBatch(devices: 3, maxFailures: 5)
        batch.record(.reverted)
        batch.record(.failed)
        batch.record(.updated)
        #expect(batch.exitStatus == 1)
        #expect(batch.summary == "3 devices: 1 updated, 1 reverted, 1 failed")
        var single = FirmwareBatch(devices: 1, maxFailures: 1)
        single.record(.reverted)
        #expect(single.exitStatus == 6)
        #expect(single.summary == "1 device: 0 updated, 1 reverted")
    }

    @Test func aLimitBelowOneMeansOne() {
        var batch = FirmwareBatch(devices: 2, maxFailures: 0)
        batch.record(.failed)
        #expect(!batch.goesOn)
        #expect(batch.summary == "2 devices: 0 updated, 1 failed, 1 not tried (stopped after 1 failure)")
    }
}
