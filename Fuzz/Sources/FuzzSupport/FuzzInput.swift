#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fuzzer input read front to back as a script. Every read succeeds: past the end it returns zeros or empty
/// runs, and `isEmpty` tells the script to stop. Small, dense encodings keep libFuzzer's mutations meaningful.
public struct FuzzInput {
    public let bytes: UnsafeRawBufferPointer
    public private(set) var index = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public var isEmpty: Bool { index >= bytes.count }
    public var remaining: Int { bytes.count - index }

    public mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    public mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    public mutating func uint32() -> UInt32 { UInt32(uint16()) | UInt32(uint16()) << 16 }

    public mutating func bool() -> Bool { byte() & 1 != 0 }

    /// One of `count` choices.
    public mutating func choice(_ count: Int) -> Int { Int(byte()) % count }

    /// Up to `count` bytes (fewer at the end of the input).
    public mutating func run(_ count: Int) -> ArraySlice<UInt8> {
        let taken = min(max(count, 0), remaining)
        defer { index += taken }
        return ArraySlice(bytes[index..<(index + taken)])
    }

    /// Everything not read yet.
    public mutating func rest() -> ArraySlice<UInt8> { run(remaining) }
}

/// Traps with `message` when `condition` is false. Unlike `precondition`, the message survives `-O`, so a crash
/// report says which rule broke.
@inline(__always)
public func check(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fatalError(message(), file: file, line: line) }
}

/// `TETHER_FUZZ_TRACE=1` makes a fuzzer print what it does; use it when replaying one input, never while fuzzing.
public let fuzzTrace = getenv("TETHER_FUZZ_TRACE") != nil

/// Prints a trace line to stderr, unbuffered, so that it comes out before a crash.
public func trace(_ line: @autoclosure () -> String) {
    guard fuzzTrace else { return }
    let text = line() + "\n"
    text.withCString { _ = write(2, $0, strlen($0)) }
}
