import BlueZ

/// Writes to the RX characteristic (link protocol §2.1: ATT Write Command, "write without response"), through an
/// AcquireWrite socket when BlueZ grants one, otherwise `WriteValue` with `type=command`. Values longer than the
/// link allows are cut into chunks of at most MTU − 3 − margin bytes: §3.1 lets a frame span several ATT values.
enum LinkWriter: Sendable {
    case socket(WriteAcquisition)
    case characteristic(GattCharacteristic, maximumValueLength: Int)

    var maximumValueLength: Int {
        switch self {
        case .socket(let acquisition): acquisition.maximumValueLength
        case .characteristic(_, let length): length
        }
    }

    /// Writes `bytes` as one or more ATT values, in order; returns how many values were written.
    func write(_ bytes: [UInt8]) async throws -> Int {
        let chunk = max(maximumValueLength, 20)
        var written = 0
        var start = 0
        while start < bytes.count {
            let end = min(start + chunk, bytes.count)
            let value = Array(bytes[start..<end])
            switch self {
            case .socket(let acquisition):
                try await acquisition.send(value)
            case .characteristic(let characteristic, _):
                try await characteristic.writeValue(value, type: .command)
            }
            written += 1
            start = end
        }
        return written
    }

    func close() {
        if case .socket(let acquisition) = self { acquisition.close() }
    }
}
