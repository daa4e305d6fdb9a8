// libFuzzer target for the firmware transcript reader (`TetherReplay.Transcript(parsing:file:)`) and what
// `tether replay` does with a transcript it accepted: transcripts are files a technician passes in, so any text
// may arrive (issue 12: a `start` past the year 2262 trapped on an Int64 overflow).
//
// Input layout: the whole input is the transcript text (invalid UTF-8 is repaired, as `String(decoding:)` does).
// Traps (real bugs): any crash (an arithmetic overflow, a conversion, an out-of-range index) in the parser or in
// the replay of a parsed transcript; a parsed transcript that does not survive `formatted()` and a second parse
// unchanged. `TranscriptError` is the expected answer to a bad file.

import TetherReplay

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    guard let transcript = try? Transcript(parsing: text, file: "fuzz") else { return 0 }

    // Writing is the other half of the format: what the reader accepted, the writer must write back as the same.
    let again: Transcript
    do {
        again = try Transcript(parsing: transcript.formatted(), file: "formatted")
    } catch {
        fatalError("a parsed transcript does not parse once formatted: \(error)\n\(transcript.formatted())")
    }
    guard again == transcript else {
        fatalError("formatting changed the transcript:\n\(transcript.formatted())\n---\n\(again.formatted())")
    }

    // What `tether replay` runs next: the recorded values through a real LinkSession, timers up to `end`.
    let outcome = TranscriptReplayer(transcript: transcript, name: "fuzz").replay()
    _ = outcome.table()
    _ = try? outcome.json()
    return 0
}
