// libFuzzer target for tetherd's configuration reader (`TetherDaemon.ConfigurationReader.parse`): TOMLKit's
// parser, the line scanner that names a key's line (`TOMLKeyLines`), every key's value check and the rules
// between keys. An administrator edits the file by hand; `tetherd --check-config` must answer any text with
// problems, never a crash.
//
// Input layout: the whole input is the document (invalid UTF-8 is repaired, as `String(decoding:)` does).
// Traps (real bugs): any crash in TOMLKit or in the reader (an overflow in a size or duration, a conversion of a
// TOML integer, an index past a line's end); a `ConfigurationError` with no problem in it, or one naming a line
// the document does not have. `ConfigurationError` is the expected answer to a bad file.

// Built from tetherd's Configuration folder (symlinked, see Package.swift): the types are this module's own.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let document = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    // TOMLKeyLines runs on every document the reader sees; drive it on its own too (the reader only reaches it
    // for documents TOMLKit accepted).
    let keyLines = TOMLKeyLines(document: document)
    let lineCount = document.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }.count
    for (path, line) in keyLines.lines where !(1...lineCount).contains(line) {
        fatalError("TOMLKeyLines put \(path) on line \(line) of \(lineCount)")
    }
    do {
        _ = try ConfigurationReader.parse(document, path: "fuzz.toml")
    } catch {
        guard !error.problems.isEmpty else { fatalError("a ConfigurationError without a problem") }
        for problem in error.problems {
            if let line = problem.line, !(1...max(lineCount, 1)).contains(line) {
                fatalError("problem on line \(line) of a \(lineCount)-line document: \(problem)")
            }
        }
        _ = error.description
    }
    return 0
}
