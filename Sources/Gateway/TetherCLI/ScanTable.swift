import TetherControlClient

/// The devices a scan has seen so far, merged by address (a later result replaces an earlier one), for the live
/// table. Pure: `tether scan` feeds it results and redraws.
struct ScanTable {
    private(set) var results: [String: GatewayRecord] = [:]

    /// Returns whether the table changed.
    @discardableResult
    mutating func merge(_ result: GatewayRecord) -> Bool {
        guard let address = result.string("address") else { return false }
        let changed = results[address] != result
        results[address] = result
        return changed
    }

    /// Strongest signal first, then by address, so the table does not jump between redraws of equal RSSI.
    var sorted: [GatewayRecord] {
        results.values.sorted {
            let (left, right) = ($0.integer("rssi") ?? Int64.min, $1.integer("rssi") ?? Int64.min)
            return left != right ? left > right : ($0.string("address") ?? "") < ($1.string("address") ?? "")
        }
    }

    var lines: [String] {
        typealias F = RecordFormatting
        var table = TextTable("ADDRESS", "NAME", "RSSI", "KNOWN", "PAIRED")
        for result in sorted {
            table.add([
                result.string("address") ?? F.absent, result.string("name") ?? F.absent,
                result.integer("rssi").map { "\($0) dBm" } ?? F.absent, F.flag(result.bool("known")),
                F.flag(result.bool("paired")),
            ])
        }
        return table.lines
    }
}
