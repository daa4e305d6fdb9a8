import Foundation

extension ReplayOutcome {
    /// Pretty JSON with sorted keys: byte-for-byte stable, so expected files diff cleanly.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self) + "\n"
    }

    /// Several outcomes as one JSON array, formatted like `json()`.
    public static func json(_ outcomes: [ReplayOutcome]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(outcomes), as: UTF8.self) + "\n"
    }

    public static func decode(json: String) throws -> ReplayOutcome {
        try JSONDecoder().decode(ReplayOutcome.self, from: Data(json.utf8))
    }

    /// A summary and tables for a person at a terminal.
    public func table() -> String {
        var lines: [String] = []
        lines.append("== \(transcript) (firmware \(firmware))")
        if let device {
            lines.append("device \(device.serial)  firmware \(device.firmware)  hw \(device.hardwareRevision)  boot \(device.bootCounter)  protocol v\(device.negotiatedVersion)")
        } else {
            lines.append("device: no handshake completed")
        }
        let timed = events.filter { $0.utc != nil }.count
        lines.append("connections \(connections)  events \(events.count) (\(timed) with UTC)  duplicates \(duplicateEvents)  repeated frames \(repeatedFrames)  ACKs sent \(acksSent)  NACKs sent \(nacksSent.count)  NACKs received \(nacksReceived.count)")
        lines.append("anchors \(anchors.count)  time-sync lost \(timeSyncLost)  reboots \(reboots.count)  rejected frames \(rejected.count)  storage refusals \(storageRefusals)")
        if let battery { lines.append("battery \(battery)") }
        if let reportedConfigVersion { lines.append("reported config version \(reportedConfigVersion)") }
        for sleep in sleeps { lines.append("sleep: \(sleep)") }
        for reason in gatewayDisconnects { lines.append("gateway disconnected: \(reason)") }

        if !events.isEmpty {
            lines.append("")
            lines += Self.render(
                header: ["boot", "seq", "ticks", "utc", "± ms", "duration ms", "intensity"],
                rows: events.map { ["\($0.boot)", "\($0.sequence)", "\($0.ticks)", $0.utc ?? "-", $0.uncertaintyMilliseconds.map { String($0) } ?? "-", "\($0.durationMilliseconds)", "\($0.intensity)"] })
        }
        if !anchors.isEmpty {
            lines.append("")
            lines += Self.render(
                header: ["anchor boot", "device ms", "utc", "± ms", "rtt ms"],
                rows: anchors.map { ["\($0.boot)", String($0.deviceMilliseconds), $0.utc, String($0.uncertaintyMilliseconds), String($0.roundTripMilliseconds)] })
        }
        if !nacksSent.isEmpty || !nacksReceived.isEmpty {
            lines.append("")
            lines += Self.render(
                header: ["at s", "NACK", "seq", "reason"],
                rows: nacksSent.map { [$0.at, "sent", "\($0.sequence)", $0.reason] } + nacksReceived.map { [$0.at, "received", "\($0.sequence)", $0.reason] })
        }
        if !rejected.isEmpty {
            lines.append("")
            lines += Self.render(
                header: ["at s", "rejected", "seq", "why"],
                rows: rejected.map { [$0.at, $0.code, $0.sequence.map { String($0) } ?? "-", $0.reason] })
        }
        if !reboots.isEmpty {
            lines.append("")
            lines += Self.render(header: ["at s", "reboot from", "to"], rows: reboots.map { [$0.at, $0.previousBoot.map { String($0) } ?? "-", "\($0.boot)"] })
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func render(header: [String], rows: [[String]]) -> [String] {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in cell + String(repeating: " ", count: widths[index] - cell.count) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return [line(header), line(widths.map { String(repeating: "-", count: $0) })] + rows.map(line)
    }
}

/// A readable line diff (longest common subsequence), for `--expect` mismatches.
public enum LineDiff {
    /// `nil` when equal; otherwise the changed lines with a little context, `-` expected, `+` actual.
    public static func diff(expected: String, actual: String, context: Int = 2, maxLines: Int = 80) -> String? {
        guard expected != actual else { return nil }
        let a = expected.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let b = actual.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // LCS table from the end, so the walk below goes forward.
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                table[i][j] = a[i] == b[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
            }
        }
        enum Line { case same(Int, String), removed(Int, String), added(Int, String) }
        var script: [Line] = []
        var i = 0
        var j = 0
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                script.append(.same(i + 1, a[i])); i += 1; j += 1
            } else if j < b.count, i == a.count || table[i][j + 1] >= table[i + 1][j] {
                script.append(.added(j + 1, b[j])); j += 1
            } else {
                script.append(.removed(i + 1, a[i])); i += 1
            }
        }
        let changed = script.indices.filter { if case .same = script[$0] { false } else { true } }
        var keep = Set<Int>()
        for index in changed { for near in max(0, index - context)...min(script.count - 1, index + context) { keep.insert(near) } }
        var output: [String] = []
        var previous = -2
        for index in keep.sorted() {
            if index != previous + 1 { output.append("@@") }
            previous = index
            switch script[index] {
            case .same(let line, let text): output.append("  \(line): \(text)")
            case .removed(let line, let text): output.append("- expected \(line): \(text)")
            case .added(let line, let text): output.append("+ actual   \(line): \(text)")
            }
            if output.count >= maxLines {
                output.append("… (\(changed.count) changed lines in all)")
                break
            }
        }
        return output.joined(separator: "\n")
    }
}
