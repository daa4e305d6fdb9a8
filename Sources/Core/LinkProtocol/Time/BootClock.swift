/// The clock of one device boot, fitted to its anchors (§9.4, §9.5).
public struct BootClock: Hashable, Sendable, Codable {
    public let bootCounter: UInt16
    public private(set) var anchors: [TimeAnchor] = []
    public private(set) var fit: Fit?

    /// `utc(ticks) = interceptNanoseconds + slope · deviceMicroseconds · 1000`; slope is gateway seconds per device
    /// second (1 for a perfect crystal).
    public struct Fit: Hashable, Sendable, Codable {
        public var slope: Double
        public var interceptNanoseconds: Double
        /// Drift allowance per unit of device time (§9.5), e.g. 200e-6.
        public var driftBound: Double
        public var largestResidualNanoseconds: Double

        /// The device clock's rate error in parts per million (positive: the device runs fast).
        public var driftPPM: Double { (1 / slope - 1) * 1e6 }
    }

    /// §9.5 constants.
    public static let singleAnchorDriftBound = 200e-6
    public static let minimumDriftBound = 5e-6
    public static let maximumDriftBound = 200e-6
    /// Anchors kept per boot: the first few pin the slope over the longest span, the latest follow the drift.
    public static let keptFirstAnchors = 8
    public static let keptLatestAnchors = 24

    public init(bootCounter: UInt16) { self.bootCounter = bootCounter }

    public mutating func add(_ anchor: TimeAnchor) {
        precondition(anchor.bootCounter == bootCounter, "§9.6: anchors never cross boots")
        anchors.append(anchor)
        anchors.sort { $0.deviceMicroseconds < $1.deviceMicroseconds }
        if anchors.count > Self.keptFirstAnchors + Self.keptLatestAnchors {
            anchors.remove(at: Self.keptFirstAnchors)
        }
        fit = Self.fit(anchors)
    }

    /// The wall-clock time of a device time in this boot, or `nil` before the boot's first anchor (§9.7).
    public func estimate(deviceMicroseconds: Int64) -> TimeEstimate? {
        guard let fit else { return nil }
        let utc = fit.interceptNanoseconds + fit.slope * Double(deviceMicroseconds) * 1000
        var nearest = Double.infinity
        for anchor in anchors {
            let distance = Double(abs(deviceMicroseconds - anchor.deviceMicroseconds)) * 1000
            nearest = min(nearest, Double(anchor.uncertaintyNanoseconds) + distance * fit.driftBound)
        }
        let uncertainty = nearest + fit.largestResidualNanoseconds
        // A hostile or broken device can report ticks or anchors that put the result outside any real date:
        // no estimate then, rather than a trap in the conversion.
        guard let utcNanoseconds = Int64(exactly: utc.rounded()), let uncertaintyNanoseconds = Int64(exactly: uncertainty.rounded(.up)) else {
            return nil
        }
        return TimeEstimate(utcNanoseconds: utcNanoseconds, uncertaintyNanoseconds: uncertaintyNanoseconds)
    }

    public func estimate(ticks: Int64) -> TimeEstimate? {
        let (microseconds, overflow) = ticks.multipliedReportingOverflow(by: 1000)
        return overflow ? nil : estimate(deviceMicroseconds: microseconds)
    }

    /// §9.4: Theil–Sen slope and median intercept; nominal slope with one anchor.
    static func fit(_ anchors: [TimeAnchor]) -> Fit? {
        guard let first = anchors.first else { return nil }
        guard anchors.count >= 2 else {
            return Fit(
                slope: 1, interceptNanoseconds: Double(first.gatewayNanoseconds) - Double(first.deviceMicroseconds) * 1000,
                driftBound: singleAnchorDriftBound, largestResidualNanoseconds: 0)
        }
        var slopes: [Double] = []
        var tilts: [Double] = []
        for i in anchors.indices {
            for j in anchors.indices where j > i {
                let deviceSpan = Double(anchors[j].deviceMicroseconds - anchors[i].deviceMicroseconds) * 1000
                guard deviceSpan > 0 else { continue }
                slopes.append(Double(anchors[j].gatewayNanoseconds - anchors[i].gatewayNanoseconds) / deviceSpan)
                tilts.append(Double(anchors[i].uncertaintyNanoseconds + anchors[j].uncertaintyNanoseconds) / deviceSpan)
            }
        }
        guard !slopes.isEmpty else {
            // All anchors at one device instant: no slope information, keep the nominal rate.
            return fit([first])
        }
        slopes.sort()
        tilts.sort()
        let slope = median(slopes)
        let intercept = median(anchors.map { Double($0.gatewayNanoseconds) - slope * Double($0.deviceMicroseconds) * 1000 }.sorted())
        let spread = (quantile(slopes, 0.75) - quantile(slopes, 0.25)) / 2
        let driftBound = min(maximumDriftBound, max(minimumDriftBound, median(tilts), 2 * spread))
        let residual = anchors.map { abs(Double($0.gatewayNanoseconds) - (intercept + slope * Double($0.deviceMicroseconds) * 1000)) }.max() ?? 0
        return Fit(slope: slope, interceptNanoseconds: intercept, driftBound: driftBound, largestResidualNanoseconds: residual)
    }

    private static func median(_ sorted: [Double]) -> Double { quantile(sorted, 0.5) }

    private static func quantile(_ sorted: [Double], _ q: Double) -> Double {
        let position = q * Double(sorted.count - 1)
        let lower = Int(position.rounded(.down))
        let upper = min(lower + 1, sorted.count - 1)
        let fraction = position - Double(lower)
        return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction
    }
}
