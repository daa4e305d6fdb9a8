/// A plain, left-aligned text table: a header row and columns padded to their widest cell, two spaces apart.
struct TextTable {
    let header: [String]
    var rows: [[String]] = []

    init(_ header: String...) {
        self.header = header
    }

    mutating func add(_ cells: [String]) {
        rows.append(cells)
    }

    /// The table's lines; trailing spaces trimmed so the output diffs cleanly.
    var lines: [String] {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { cells in
            var line = ""
            for (column, width) in widths.enumerated() {
                let cell = column < cells.count ? cells[column] : ""
                line += column == widths.count - 1 ? cell : cell.padding(toLength: width + 2, withPad: " ", startingAt: 0)
            }
            while line.hasSuffix(" ") { line.removeLast() }
            return line
        }
    }

    var text: String { lines.joined(separator: "\n") }
}
