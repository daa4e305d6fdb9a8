// libFuzzer target for the RACP client (HealthProfiles/RecordAccess) and its codec.
//
// The input is a script. Byte 0 picks the configuration (keys, count first, retry limit); bytes 1–5 the starting
// cursor (epoch, last, fence). Then each step is one op byte — low 3 bits the op, high 5 bits how far the manual
// clock moves first — and its operands. Ops: a record with a fuzzer-chosen key; raw indication bytes; a well-formed
// response (any op code, response code or count); a write failure with any ATT code; fire the armed timer (or a
// stale one); a disconnect followed by a new connection from the committed cursor; a deletion with any permit, a
// count within any range (rule 9) or an answer to the latest-record comparison (rule 4: same, other, unknown, asked
// or not); start. The harness plays the gateway: it keeps the records of the request in flight and stores commits.
//
// Traps (real bugs): any crash, and broken orders: a cursor that moves back or commits keys that did not arrive
// in the request in flight, an (epoch, key) committed twice, commit keys not ascending, a write after the link
// dropped, a timer armed in the past, two `.finished` for one procedure, a client cursor other than the committed
// one. Every decoded response and request must encode back to what was decoded.

import FuzzSupport
import HealthProfiles
import TetherPrimitives

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    var harness = Harness(&input)
    while !input.isEmpty { harness.step(&input) }
    return 0
}

struct Harness {
    let configuration: RecordAccessConfiguration
    var client: RecordAccessClient
    var committed: RecordCursor
    var stored: Set<[UInt32]> = []
    var buffer: Set<UInt16> = []
    var now = Timestamp(nanoseconds: 1_750_000_000_000_000_000)
    var timer: Timestamp?
    var linkUp = true
    var finishedThisProcedure = false
    /// The client asked `.confirmLatest` and has no answer yet.
    var confirming = false

    init(_ input: inout FuzzInput) {
        let setup = input.byte()
        configuration = RecordAccessConfiguration(
            keys: setup & 1 == 0 ? .sequenceNumber : .timeOffset, asksForCountFirst: setup & 2 != 0,
            retryLimit: Int(setup >> 2 & 3), requestLimit: 4 + Int(setup >> 4), seed: UInt64(setup))
        let epoch = UInt32(input.byte() % 4)
        let lastByte = input.byte()
        let explicit = input.uint16()
        let last: UInt16? = lastByte & 1 == 0 ? nil : [0, 1, 100, .max - 1, .max, explicit][Int(lastByte >> 1) % 6]
        let fence: UInt16? = input.bool() ? input.uint16() : nil
        committed = RecordCursor(epoch: epoch, last: last, fence: fence)
        client = RecordAccessClient(configuration: configuration, cursor: committed)
    }

    mutating func step(_ input: inout FuzzInput) {
        let op = input.byte()
        let shift = op >> 3
        if shift > 0 { now = now.advanced(by: .milliseconds(1 << Int64(min(shift - 1, 20)))) }
        trace("@\(now.nanoseconds / 1_000_000 % 1_000_000_000) ms  op \(op & 7)  cursor \(committed)")
        switch op & 7 {
        case 0:
            let key = input.bool() ? input.uint16() : (committed.last ?? 0) &+ UInt16(input.byte() % 8)
            buffer.insert(key)
            apply(client.recordReceived(sequence: key, at: now))
        case 1:
            let bytes = Array(input.run(Int(input.byte() % 12)))
            roundTrip(bytes)
            apply(client.indicationReceived(bytes: bytes, at: now))
        case 2:
            let response: RecordAccessResponse
            switch input.byte() % 3 {
            case 0: response = .numberOfStoredRecords(UInt32(input.uint16() % 64))
            case 1: response = .responseCode(request: RecordAccessOpCode(rawValue: input.byte() % 5), code: RecordAccessResponseCode(rawValue: input.byte() % 12))
            default: response = .responseCode(request: .reportStoredRecords, code: input.bool() ? .success : .noRecordsFound)
            }
            check((try? RecordAccessResponse.decode(response.bytes)) == response, "response round trip: \(response)")
            apply(client.indicationReceived(bytes: response.bytes, at: now))
        case 3:
            apply(client.writeFailed(attError: [0xFE, 0xFD, 0x80, 0x81, input.byte()][input.choice(5)], at: now))
        case 4:
            let atDeadline = input.bool()  // otherwise a stale fire, at `now`
            if let deadline = timer, atDeadline {
                now = max(now, deadline)
                timer = nil
            }
            apply(client.timerFired(at: now))
        case 5:
            linkUp = false
            apply(client.disconnected(at: now))
            check(!client.isRunning, "still running after a disconnect")
            // The next connection: a new client from the committed cursor.
            linkUp = true
            timer = nil
            buffer = []
            finishedThisProcedure = false
            confirming = false
            client = RecordAccessClient(configuration: configuration, cursor: committed)
        case 6:
            switch input.byte() % 3 {
            case 0:
                let permit = RecordDeletionPermit(epoch: committed.epoch &+ UInt32(input.byte() % 2), acknowledgedThrough: input.uint16())
                do {
                    let orders = try client.deleteRecords(permit: permit, at: now)
                    finishedThisProcedure = false
                    check(permit.epoch == committed.epoch && committed.fence == nil, "a deletion outside the permit's epoch")
                    check(committed.last.map { permit.acknowledgedThrough <= $0 } ?? false, "a deletion beyond the cursor")
                    apply(orders)
                } catch {
                    // Refused: fine, as long as nothing was ordered.
                }
            case 1:
                let (a, b) = (input.uint16(), input.uint16())
                let range = min(a, b)...max(a, b)
                do {
                    let orders = try client.countRecords(in: range, at: now)
                    finishedThisProcedure = false
                    check(configuration.keys == .sequenceNumber && committed.fence == nil, "a count in a fenced epoch or of time offsets")
                    check(committed.last.map { range.upperBound <= $0 } ?? false, "a count beyond the cursor")
                    apply(orders)
                } catch {
                    // Refused: fine.
                }
            default:
                let answer: Bool? = [true, false, nil][input.choice(3)]
                check(confirming || client.latestConfirmed(answer, at: now).isEmpty, "an unasked comparison changed something")
                if confirming {
                    confirming = false
                    apply(client.latestConfirmed(answer, at: now))
                }
            }
        default:
            apply(client.start(now: now))
        }
    }

    mutating func apply(_ orders: [RecordAccessOrder]) {
        if fuzzTrace { for order in orders { trace("    \(order)") } }
        for order in orders {
            switch order {
            case .write(let bytes):
                check(linkUp, "a write after the link dropped")
                check(!finishedThisProcedure, "a write after .finished")
                check((try? RecordAccessRequest.decode(bytes, keys: configuration.keys))?.bytes == bytes, "the client wrote a request that does not decode: \(bytes)")
                buffer = []
            case .commit(let commit):
                check(committed.allowsMove(to: commit.cursor), "cursor moved back: \(committed) → \(commit.cursor)")
                check(commit.keys == commit.keys.sorted() && Set(commit.keys).count == commit.keys.count, "keys not ascending: \(commit.keys)")
                if let last = commit.keys.last { check(commit.cursor.last == last, "cursor \(commit.cursor) is not the last key \(last)") }
                for key in commit.keys {
                    check(buffer.contains(key), "committed key \(key) that did not arrive in this request")
                    check(stored.insert([commit.cursor.epoch, UInt32(key)]).inserted, "(epoch \(commit.cursor.epoch), key \(key)) committed twice")
                }
                committed = commit.cursor
            case .armTimer(let at):
                check(at >= now, "timer armed in the past")
                timer = at
            case .cancelTimer:
                timer = nil
            case .finished:
                check(!finishedThisProcedure, "finished twice")
                finishedThisProcedure = true
            case .noted:
                break
            case .confirmLatest(let key, let epoch):
                check(configuration.keys == .sequenceNumber, "a comparison for time offsets")
                check(epoch == committed.epoch && committed.last.map { key < $0 } ?? false, "a comparison not below the cursor: \(key) in \(committed)")
                confirming = true
            }
        }
        check(client.cursor == committed, "client cursor \(client.cursor) is not the committed \(committed)")
    }

    func roundTrip(_ bytes: [UInt8]) {
        if let response = try? RecordAccessResponse.decode(bytes) {
            check((try? RecordAccessResponse.decode(response.bytes)) == response, "response re-encode: \(bytes)")
        }
        for keys in [RecordKeyKind.sequenceNumber, .timeOffset] {
            if let request = try? RecordAccessRequest.decode(bytes, keys: keys) {
                check(request.bytes == bytes, "request re-encode: \(bytes)")
            }
        }
    }
}
