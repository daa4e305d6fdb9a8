/// All boot segments of one device's clock (§9.6): anchors per boot, never mixed.
public struct DeviceClock: Hashable, Sendable, Codable {
    public private(set) var boots: [UInt16: BootClock] = [:]

    public init() {}

    public mutating func add(_ anchor: TimeAnchor) {
        boots[anchor.bootCounter, default: BootClock(bootCounter: anchor.bootCounter)].add(anchor)
    }

    public func hasAnchor(boot: UInt16) -> Bool { boots[boot]?.fit != nil }

    /// The wall-clock time of `ticks` (milliseconds since boot `boot`), or `nil` when that boot has no anchor yet.
    public func estimate(boot: UInt16, ticks: Int64) -> TimeEstimate? {
        boots[boot]?.estimate(ticks: ticks)
    }
}
