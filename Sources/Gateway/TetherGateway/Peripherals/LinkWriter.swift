import BlueZ

/// Writes to the RX characteristic (link protocol §2.1: ATT Write Command, "write without response") through
/// `WriteWithoutResponse` (an AcquireWrite socket when BlueZ grants one, otherwise `WriteValue` with `type=command`).
/// Values longer than the link allows are cut into chunks of at most MTU − 3 − margin bytes: §3.1 lets a frame span
/// several ATT values.
struct LinkWriter: Sendable {
    let channel: WriteWithoutResponse

    var maximumValueLength: Int { channel.maximumValueLength }

    /// Writes `bytes` as one or more ATT values, in order; returns how many values were written.
    func write(_ bytes: [UInt8]) async throws -> Int {
        let chunk = max(maximumValueLength, 20)
        var written = 0
        var start = 0
        while start < bytes.count {
            let end = min(start + chunk, bytes.count)
            try await channel.write(Array(bytes[start..<end]))
            written += 1
            start = end
        }
        return written
    }

    func close() { channel.close() }
}
