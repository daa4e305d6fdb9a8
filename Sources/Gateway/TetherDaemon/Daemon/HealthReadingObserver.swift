import ServiceLifecycle
import TetherGateway

/// Turns the hot lane's live readings into the control API's `HealthReading` signal (docs/specs/control-api.md),
/// intermediate values included: they are shown live and never stored (issue 14, item 2 "hot"). A reading while
/// the control API is not on the bus is not signalled.
struct HealthReadingObserver: Service {
    let lane: HealthHotLane
    let hub: SignalHub

    func run() async throws {
        let readings = await lane.liveReadings()
        await cancelWhenGracefulShutdown {
            for await reading in readings { hub.current?.healthReading(reading) }
        }
    }
}
