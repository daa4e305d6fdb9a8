// libFuzzer target for what a gateway reads of the change feed (docs/specs/sync-api.yaml, `ChangePage`): the page's
// JSON decoded as TetherSync decodes it, each change's rules (`Change.problem`, the integrity gate's first check) and
// the page checksum's canonical lines (`PageChecksum`), for every kind, the healthSample deletions included.
//
// Input layout: the whole input is a response body (JSON).
//
// Traps (real bugs): any crash; a decoded page that does not encode and decode back to itself; a canonical line with
// a raw line feed anywhere but at its end (the escaping must keep one change one line, or two pages could share a
// checksum); a line that does not begin with the change's kind and operation.

import Foundation
import SyncContract

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(UnsafeRawBufferPointer(start: start, count: count))
    guard let page = try? JSONDecoder().decode(ChangePage.self, from: data) else { return 0 }
    for change in page.changes {
        _ = change.problem
        let line = PageChecksum.canonicalLine(change)
        precondition(line.last == "\n" && line.dropLast().allSatisfy { $0 != "\n" }, "a canonical line with a raw line feed: \(line.debugDescription)")
        precondition(line.hasPrefix("\(change.kind.rawValue)\t\(change.operation.rawValue)\t"), "a line that does not start with its kind: \(line.debugDescription)")
    }
    _ = PageChecksum.checksum(of: page.changes)
    guard let encoded = try? JSONEncoder().encode(page) else { preconditionFailure("a decoded page does not encode") }
    let again = try? JSONDecoder().decode(ChangePage.self, from: encoded)
    precondition(again == page, "a page does not survive an encode/decode round trip")
    return 0
}
