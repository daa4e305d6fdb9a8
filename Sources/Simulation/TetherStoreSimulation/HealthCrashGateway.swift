import Foundation
import TetherPrimitives
import TetherStore

/// The gateway half of the health crash test: `HealthCrashPlan`'s streams ingested through a real `HealthStore` and
/// `GroupCommitter` over a real database file, every stream with one batch in flight, until stdin closes or the
/// driver SIGKILLs it. It prints (unbuffered, so a kill loses no line written):
///
///     ready                                   the database is open
///     H <stream> <epoch> <through> <stored> <duplicates>   a batch's completion: durably committed
///     P <stream> <epoch> <through>            `pauseAt`: this batch's samples are written, its cursor is not, and
///                                             the writer now waits inside the transaction to be killed
public enum HealthCrashGateway {
    public static func run(databasePath: String, plan: HealthCrashPlan, pauseAt: Int?) async throws {
        let database = try GatewayDatabase(path: databasePath)
        let shared = Shared()
        let faults = HealthStoreFaults(afterSamplesBeforeCursor: { batch in
            let (count, uids) = shared.countApplied()
            guard count == pauseAt, let cursor = batch.cursor else { return }
            let stream = uids.firstIndex(of: batch.peripheralUid) ?? -1
            Output.write("P \(stream) \(cursor.epoch) \(cursor.position ?? -1)\n")
            while true { sleep(60) }  // the samples are written, the cursor is not: the driver kills us here
        })
        let store = HealthStore(database: database, faults: faults)
        let committer = GroupCommitter(service: ConsumptionService(database: database))
        let checkpoints = Task { await database.runCheckpoints() }
        defer { checkpoints.cancel() }

        var random = SystemRandomNumberGenerator()
        let registry = PeripheralRegistry(database: database)
        var registered: [String] = []
        for index in 0..<plan.streams {
            registered.append(try registry.register(identityAddress: HealthCrashPlan.address(stream: index), at: WallClock.now(), using: &random).uid)
        }
        shared.setUids(registered)

        let (completions, continuation) = AsyncStream.makeStream(of: (Int, HealthIngestBatch, Result<HealthIngestOutcome, HealthStoreError>).self)
        func submit(_ index: Int, _ batch: HealthIngestBatch) {
            store.submit(batch, to: committer) { continuation.yield((index, batch, $0)) }
        }
        for index in 0..<plan.streams {
            let cursor = try store.cursors(peripheralUid: registered[index]).first.map { ($0.epoch, $0.position) }
            submit(index, plan.nextBatch(peripheralUid: registered[index], stream: index, cursor: cursor))
        }
        let stdinClosed = Thread {
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) > 0 {}
            continuation.finish()
        }
        stdinClosed.start()
        Output.write("ready\n")
        for await (index, batch, result) in completions {
            guard let cursor = batch.cursor else { continue }
            switch result {
            case .success(let outcome):
                Output.write("H \(index) \(cursor.epoch) \(cursor.position ?? -1) \(outcome.storedCount) \(outcome.duplicateCount)\n")
                submit(index, plan.nextBatch(peripheralUid: batch.peripheralUid, stream: index, cursor: (cursor.epoch, cursor.position)))
            case .failure(let error):
                FileHandle.standardError.write(Data("health batch of stream \(index) not stored: \(error)\n".utf8))
                submit(index, batch)
            }
        }
    }

    /// What the fault closure (on the writer's queue) shares with the main loop.
    private final class Shared: @unchecked Sendable {
        private let lock = NSLock()
        private var applied = 0
        private var uids: [String] = []

        func setUids(_ uids: [String]) {
            lock.lock()
            defer { lock.unlock() }
            self.uids = uids
        }

        /// Counts one more batch reaching its cursor write; returns the count and the peripherals' uids.
        func countApplied() -> (Int, [String]) {
            lock.lock()
            defer { lock.unlock() }
            applied += 1
            return (applied, uids)
        }
    }
}
