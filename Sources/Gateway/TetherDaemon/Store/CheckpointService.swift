import Logging
import ServiceLifecycle
import TetherStore

/// Background WAL checkpoints next to the group committer (docs/design/store.md, "WAL checkpoints"), so commits, and
/// the ACKs waiting on them, never wait for a checkpoint. Stops with the group; the last commit's data is in the
/// WAL, which SQLite replays on the next open, so nothing depends on a final checkpoint.
struct CheckpointService: Service {
    let database: GatewayDatabase
    let interval: Duration
    let logger: Logger

    func run() async throws {
        let logger = self.logger
        await cancelWhenGracefulShutdown {
            await database.runCheckpoints(every: interval) { error in
                logger.warning("WAL checkpoint failed; retrying at the next tick", metadata: ["error": "\(error)"])
            }
        }
    }
}
