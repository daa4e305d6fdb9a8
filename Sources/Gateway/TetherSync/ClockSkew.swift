import Foundation

/// How far the gateway's wall clock is from the server's, from the Date header of answers. Reported (status,
/// logs), never used: cursors are server sequence numbers, and event times come from the device-clock model.
///
/// A Date header has one-second resolution and is stamped somewhere within the round trip, so a sample is the
/// server's date minus the local time at the middle of the round trip, and is only as good as ±(0.5 s + half
/// the round trip).
public enum ClockSkew {
    public struct Sample: Hashable, Sendable {
        /// Positive: the server's clock is ahead of the gateway's.
        public var offset: Duration
        public var uncertainty: Duration
    }

    public static func sample(serverDate: String, requestSentAt: Date, roundTrip: Duration) -> Sample? {
        guard let server = HTTPDate.parse(serverDate) else { return nil }
        let halfTrip = Double(roundTrip.nanoseconds) / 2e9
        let localMiddle = requestSentAt.addingTimeInterval(halfTrip)
        // The header truncates to the second: the server's instant lies in [date, date + 1 s).
        let offset = server.addingTimeInterval(0.5).timeIntervalSince(localMiddle)
        return Sample(offset: .milliseconds(Int64((offset * 1000).rounded())), uncertainty: .milliseconds(500) + roundTrip / 2)
    }
}
