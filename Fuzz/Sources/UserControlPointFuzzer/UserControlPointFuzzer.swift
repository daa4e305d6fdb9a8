// libFuzzer target for the User Data Service's User Control Point (HealthProfiles, UserData/): the indication
// decoder a multi-user scale's bytes reach, the request decoder, and the consent procedure driven by fuzzer-chosen
// facts (indications with fuzzer bytes, write failures with ATT errors, timers, a disconnect).
//
// Input layout: byte 0 picks how many users (1…4) the procedure consents to; then facts, each a kind byte and its
// arguments, until the input ends. Every indication's bytes are also fed to both decoders alone.
//
// Traps (real bugs): any crash; a request that decodes but does not encode back to its bytes; a response that
// decodes with a parameter it may not carry; the procedure deciding a user twice, deciding a user it was not given,
// finishing without every user decided (or in another order than index order), or ordering anything after it
// finished (other than noting a fact that changed nothing).

import FuzzSupport
import HealthProfiles
import TetherPrimitives

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    let users = (0..<(1 + input.choice(4))).map { index in
        UserConsentProcedure.Credential(userIndex: UInt8(index + 1), code: ConsentCode(UInt16(1000 + index))!)
    }
    var procedure = UserConsentProcedure(credentials: users)
    var now = Timestamp(nanoseconds: 1_795_000_000_000_000_000)
    var decided: [UInt8] = []
    var finished = false
    func absorb(_ orders: [UserConsentProcedure.Order]) {
        for order in orders {
            // A fact after the end is only noted (rule 6: "a fact that changed nothing").
            if case .noted = order { continue }
            precondition(!finished, "an order after finished: \(order)")
            switch order {
            case .outcome(let index, _):
                precondition(users.contains { $0.userIndex == index }, "decided user \(index), which it was not given")
                precondition(!decided.contains(index), "decided user \(index) twice")
                decided.append(index)
            case .finished(let outcomes):
                precondition(outcomes.map(\.userIndex) == users.map(\.userIndex), "finished with \(outcomes.map(\.userIndex))")
                precondition(Set(decided) == Set(users.map(\.userIndex)), "finished with users undecided: \(decided)")
                finished = true
            case .write(let request):
                precondition((try? UserControlPointRequest.decode(request.bytes)) == request, "a written request does not decode to itself")
            case .armTimer, .cancelTimer, .noted:
                break
            }
        }
    }
    absorb(procedure.start(at: now))
    while !input.isEmpty {
        now = now.advanced(by: .milliseconds(Int64(input.uint16())))
        switch input.choice(5) {
        case 0, 1:
            let bytes = Array(input.run(Int(input.byte() % 8)))
            check(bytes)
            absorb(procedure.indicationReceived(bytes, at: now))
        case 2:
            absorb(procedure.writeFailed(attError: input.bool() ? input.byte() : nil, at: now))
        case 3:
            absorb(procedure.timerFired(at: now))
        default:
            absorb(procedure.disconnected(at: now))
        }
    }
    return 0
}

func check(_ bytes: [UInt8]) {
    if let request = try? UserControlPointRequest.decode(bytes) {
        precondition(request.bytes == bytes, "request \(request) encodes as \(request.bytes), decoded from \(bytes)")
    }
    if let response = try? UserControlPointResponse.decode(bytes) {
        let registered = response.request == .registerNewUser && response.result == .success
        precondition((response.registeredUserIndex != nil) == registered, "a parameter where none may be: \(bytes)")
        precondition(bytes.count == (registered ? 4 : 3), "response of \(bytes.count) bytes accepted")
    }
}
