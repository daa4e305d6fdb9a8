import ArgumentParser
import Dispatch
import Foundation
import TetherControlClient

/// `tether scan`: start tetherd's scan and show what it finds as a live table until --duration or Ctrl-C.
struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Scan for devices and show them live: address, name, RSSI, known, paired.",
        discussion: """
            The table redraws in place on a terminal; otherwise it is printed once at the end. With --json each \
            result is printed as one JSON line as it arrives. Ctrl-C stops the scan early. Starting a scan needs \
            root or the 'tether' group.
            """)

    @OptionGroup var connection: BusOptions

    @Option(help: ArgumentHelp("How long to scan, in seconds (0 = until Ctrl-C).", valueName: "seconds"))
    var duration: Double = 10

    @Flag(help: "Print each scan result as one JSON line (keys as in docs/specs/control-api.md).")
    var json = false

    func validate() throws {
        guard duration >= 0, duration <= 86_400 else {
            throw ValidationError("--duration must be between 0 and 86400 seconds, not \(duration)")
        }
    }

    func run() async throws {
        let live = !json && Output.isTerminal
        let (json, duration) = (self.json, self.duration)
        let interruption = Interruption()
        defer { interruption.cancel() }
        try await connection.withGateway { client in
            let results = try await client.signals(.scanResult)
            try await client.startScan()
            let renderer = ScanRenderer(json: json, live: live)
            for result in try await client.scanResults() { renderer.add(result) }
            renderer.draw()
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await signal in results {
                        guard let first = signal.arguments.first, let fields = first.variantDictionaryValue else { continue }
                        renderer.add(GatewayRecord(fields))
                        renderer.drawIfDue()
                    }
                }
                if duration > 0 {
                    group.addTask { try? await Task.sleep(for: .seconds(duration)) }
                }
                group.addTask { await interruption.wait() }
                await group.next()
                group.cancelAll()
            }
            // Stop the scan even after Ctrl-C: tetherd would otherwise keep the radio scanning.
            try await client.stopScan()
            renderer.finish()
        }
    }
}

/// Draws the scan table: in place on a terminal (at most 5 times a second), JSON lines, or once at the end.
private final class ScanRenderer: @unchecked Sendable {
    private let lock = NSLock()
    private var table = ScanTable()
    private var drawnLines = 0
    private var lastDraw = ContinuousClock.now
    private let json: Bool
    private let live: Bool

    init(json: Bool, live: Bool) {
        self.json = json
        self.live = live
    }

    func add(_ result: GatewayRecord) {
        lock.withLock {
            _ = table.merge(result)
            if json { Output.line(RecordJSON.text(result, pretty: false)) }
        }
    }

    func drawIfDue() {
        lock.withLock {
            guard live, ContinuousClock.now - lastDraw >= .milliseconds(200) else { return }
            redraw()
        }
    }

    func draw() {
        lock.withLock { if live { redraw() } }
    }

    func finish() {
        lock.withLock {
            guard !json else { return }
            if live {
                redraw()
            } else {
                Output.line(table.results.isEmpty ? "No devices found." : table.lines.joined(separator: "\n"))
            }
        }
    }

    /// ANSI: move up over the previous table and clear to the end of the screen, then print the new one.
    private func redraw() {
        var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A\u{1B}[J" : ""
        let lines = table.results.isEmpty ? ["Scanning..."] : table.lines
        text += lines.joined(separator: "\n")
        Output.line(text)
        drawnLines = lines.count
        lastDraw = .now
    }
}

/// SIGINT/SIGTERM as an awaitable event, so a long-running command can stop cleanly (StopScan, unexport).
final class Interruption: @unchecked Sendable {
    private let lock = NSLock()
    private var fired = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var sources: [DispatchSourceSignal] = []

    init() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.fire() }
            source.resume()
            sources.append(source)
        }
    }

    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = lock.withLock {
                    if fired { return true }
                    waiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            fire()
        }
    }

    private func fire() {
        let waiting = lock.withLock {
            fired = true
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Restores the default dispositions so a second Ctrl-C after the command ended kills the process.
    func cancel() {
        for source in sources { source.cancel() }
        for number in [SIGINT, SIGTERM] { signal(number, SIG_DFL) }
    }
}
