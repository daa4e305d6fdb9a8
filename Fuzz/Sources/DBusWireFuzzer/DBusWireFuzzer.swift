// libFuzzer target for the D-Bus wire-protocol reader (`DBus.DBusWireConnection`): the bytes a bus socket
// delivers, which come from another process.
//
// Input layout: the raw byte stream, read as consecutive marshalled messages (either byte order), exactly as the
// connection's receive buffer is. Traps (real bugs): any crash — an out-of-bounds read, an arithmetic overflow, a
// borrowed value longer than its message. Errors thrown for malformed bytes are the expected outcome.

import DBus

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    DBusWireParsingExercise.run(UnsafeRawBufferPointer(start: start, count: count))
    return 0
}
