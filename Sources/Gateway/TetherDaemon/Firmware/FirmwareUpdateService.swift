import ServiceLifecycle

/// Firmware updates across tetherd's life (docs/design/ota.md, "tetherd owns the radio"): at start, the journal's
/// unfinished updates resume once their devices connect; at a graceful shutdown the updates in flight are cancelled
/// before the gateway stops (this service comes after it in the group, and a group stops in reverse order), so each
/// is left unfinished where its device was rather than failed by the disconnect.
struct FirmwareUpdateService: Service {
    let updates: FirmwareUpdates

    func run() async throws {
        let resuming = Task { await updates.resumeUnfinished() }
        try? await gracefulShutdown()
        resuming.cancel()
        await updates.cancelAll()
        await resuming.value
    }
}
