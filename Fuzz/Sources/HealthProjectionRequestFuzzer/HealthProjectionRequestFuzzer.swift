// libFuzzer target for what tether-server reads of a health projection request (issue 15): the UTC day parser
// (`HealthProjectionDay(text:)`, RFC 3339 full-date) and the request body's decoding.
//
// Input layout: the whole input is a request body (JSON); its text is also tried as a day.
//
// Traps (real bugs): any crash (an index past the text, an overflow in the day arithmetic or the instants); a day
// that parses but does not print back as the same text; a day whose instants are not one day long unless clamped at
// Int64's ends; an instant inside a day's range that falls on another day.

import Foundation
import SyncContract

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let text = String(decoding: bytes, as: UTF8.self)
    check(day: text)
    if let request = try? JSONDecoder().decode(HealthProjectionsRequest.self, from: Data(bytes)) {
        for key in request.keys { check(day: key.day) }
    }
    return 0
}

func check(day text: String) {
    guard let day = HealthProjectionDay(text: text) else { return }
    precondition(day.text == text, "day \(text) prints back as \(day.text)")
    let instants = day.instants
    let clamped = instants.lowerBound == Int64.min || instants.upperBound == Int64.max
    precondition(clamped || instants.count == Int(HealthProjectionDay.nanosecondsPerDay), "day \(text) is \(instants.count) ns long")
    if !clamped {
        precondition(HealthProjectionDay(containing: instants.lowerBound) == day, "the first instant of \(text) is on another day")
        precondition(HealthProjectionDay(containing: instants.upperBound - 1) == day, "the last instant of \(text) is on another day")
    }
}
