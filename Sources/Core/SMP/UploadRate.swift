/// How fast an upload goes and how long it has left, for a technician watching one: from samples of the bytes the
/// device confirmed and when (time passed in as the time since the upload began, so the estimate is pure).
///
/// The rate is taken over the last `window` of samples, not since the start: an SMP upload over BLE starts slowly
/// (connection parameters, MTU exchange, the first erase of the slot) and changes speed when the link does, and a
/// technician wants to know when this upload ends, not what its average was.
public struct UploadRate: Sendable {
    public let window: Duration
    private var samples: [(elapsed: Duration, bytes: Int)] = []

    public init(window: Duration = .seconds(5)) {
        self.window = window
    }

    /// Records that `confirmedBytes` were confirmed `elapsed` after the upload began. Samples older than the
    /// window are dropped, keeping at least one before the newest so that a rate can still be given.
    public mutating func record(confirmedBytes: Int, elapsed: Duration) {
        samples.append((elapsed, confirmedBytes))
        while samples.count > 2, samples[1].elapsed <= elapsed - window { samples.removeFirst() }
    }

    /// Bytes per second over the window; nil until two samples are some time apart.
    public var bytesPerSecond: Double? {
        guard let first = samples.first, let last = samples.last, last.elapsed > first.elapsed else { return nil }
        let seconds = Double((last.elapsed - first.elapsed) / .milliseconds(1)) / 1000
        guard seconds > 0 else { return nil }
        return Double(last.bytes - first.bytes) / seconds
    }

    /// Seconds until `totalBytes` at the current rate; nil without a rate, or while nothing moves.
    public func secondsLeft(totalBytes: Int) -> Double? {
        guard let rate = bytesPerSecond, rate > 0, let last = samples.last else { return nil }
        return Double(max(totalBytes - last.bytes, 0)) / rate
    }
}
