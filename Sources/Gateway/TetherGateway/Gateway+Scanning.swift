import BlueZ
import ConnectionSupervisor
import DBus
import LinkProtocol
import TetherStore
import TetherPrimitives

/// Scanning: LE discovery for a technician's scan or for adopted devices BlueZ does not export.
extension Gateway {
    // MARK: - Scanning

    /// Starts LE discovery on the adapter. Results accumulate in `scanResults()` and stream from `scanEvents()`.
    public func startScan() async throws(GatewayError) {
        guard bluezSynchronized else { throw .unavailable("org.bluez is not on the bus") }
        guard !scanning else { return }
        scanResultsByAddress.removeAll()
        scanning = true
        do {
            try await updateDiscovery()
        } catch {
            scanning = false
            throw error
        }
    }

    public func stopScan() async throws(GatewayError) {
        guard scanning else { return }
        scanning = false
        try await updateDiscovery()
    }

    /// Holds a discovery session while someone scans, or while an adopted device is missing from BlueZ (removed
    /// after InProgress, or not bonded and so not reloaded after a bluetoothd restart): BlueZ only exports it
    /// again, and so only connects it, once it has been seen advertising.
    func updateDiscovery() async throws(GatewayError) {
        guard bluezSynchronized else { return }
        var needed = scanning || pairingDiscovery
        if !needed && !shuttingDown && !wanted.isEmpty {
            let exported = await tree.devices
            needed = wanted.contains { exported[adapter.devicePath(address: $0)] == nil }
        }
        guard needed != discovering else { return }
        // The calls below suspend: if bluetoothd restarts meanwhile, their outcome was the old daemon's, and the new
        // one has no discovery session whatever they answered. `discovering` stays false then (set by the restart),
        // so the next call starts discovery on the new daemon; a stale `true` would leave a missing device unfound for good.
        let life = bluezLife
        do {
            if needed {
                try await adapter.setDiscoveryFilter(DiscoveryFilter(transport: .le))
                try await adapter.startDiscovery()
            } else {
                try await adapter.stopDiscovery()
            }
            if life == bluezLife { discovering = needed }
        } catch BlueZError.inProgress where needed {
            if life == bluezLife { discovering = true }
        } catch BlueZError.failed where !needed {
            if life == bluezLife { discovering = false }  // "No discovery started": already stopped
        } catch {
            throw .unavailable("\(needed ? "StartDiscovery" : "StopDiscovery") failed: \(error)")
        }
    }

    public var isScanning: Bool { scanning }

    /// Devices seen since the scan started, strongest signal first.
    public func scanResults() -> [ScanResult] {
        scanResultsByAddress.values.sorted { ($0.rssi ?? .min, $1.address) > ($1.rssi ?? .min, $0.address) }
    }

    /// Scan results as they come (a device seen, or its RSSI changed). Finishes when the gateway stops.
    public func scanEvents() -> AsyncStream<ScanResult> {
        let (stream, continuation) = AsyncStream.makeStream(of: ScanResult.self)
        let id = nextSubscriber
        nextSubscriber += 1
        scanSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }
}
