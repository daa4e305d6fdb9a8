import CBOR
import SMP
import Testing
import TetherPrimitives

/// SMPClient's rules (SMPClient.swift 1-4), driven with bytes and a manual clock; every order asserted.
struct SMPClientTests {
    let start = Timestamp(nanoseconds: 0)

    func client(writeLimit: Int = 244, reassembles: Bool = false, retries: Int = 1, firstSequence: UInt8 = 0) -> SMPClient {
        SMPClient(
            configuration: .init(version: .v2, writeLimit: writeLimit, deviceReassembles: reassembles, timeout: .seconds(2), retries: retries),
            firstSequence: firstSequence)
    }

    /// A device's answer to `request` (its bytes as written) with `body`.
    func answer(_ request: [UInt8], _ body: CBORValue, sequence: UInt8? = nil) throws -> [UInt8] {
        let header = try #require(try SMPHeader(request))
        let bytes = body.encoded
        return SMPHeader(
            version: header.version, operation: header.operation.response, length: UInt16(bytes.count), group: header.group,
            sequence: sequence ?? header.sequence, command: header.command).encoded + bytes
    }

    func written(_ orders: [SMPClient.Order]) -> [[UInt8]] {
        orders.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
    }

    /// Rule 1: sequences count up and wrap at 255; one still waiting is skipped.
    @Test func sequencesWrapAndSkipWaitingOnes() throws {
        var client = client(firstSequence: 254)
        var sequences: [UInt8] = []
        for _ in 0..<4 {
            let (_, orders) = try client.send(.echo("x"), at: start)
            sequences.append(written(orders)[0][6])
        }
        #expect(sequences == [254, 255, 0, 1])
        // 254 is still waiting when the counter comes round again: it is skipped.
        var wrapped = self.client(firstSequence: 254)
        let (held, first) = try wrapped.send(.echo("held"), at: start)
        var next: UInt8 = 0
        for _ in 0..<255 {
            let (tag, orders) = try wrapped.send(.echo("y"), at: start)
            next = written(orders)[0][6]
            _ = wrapped.received(try answer(written(orders)[0], .textMap(["r": .text("y")])), at: start)
            _ = tag
        }
        #expect(next == 253, "255 sends after 254: 255, 0…253")
        let (_, orders) = try wrapped.send(.echo("z"), at: start)
        #expect(written(orders)[0][6] == 255, "254 is still waiting, so it is skipped")
        #expect(wrapped.received(try answer(written(first)[0], .textMap(["r": .text("held")])), at: start)
            .contains { if case .completed(held, .success) = $0 { true } else { false } })
    }

    /// Rule 1: a response is matched by sequence, group, command and kind; others are unmatched.
    @Test func responsesAreMatched() throws {
        var client = client()
        let (echoTag, echo) = try client.send(.echo("a"), at: start)
        let (stateTag, state) = try client.send(.imageState, at: start)
        // Right sequence, wrong command: unmatched.
        var wrong = try answer(written(echo)[0], .textMap(["r": .text("a")]))
        wrong[7] = SMPOSCommand.reset
        #expect(client.received(wrong, at: start) == [.unmatched(try #require(try SMPHeader(wrong)))])
        // Answers in the other order, both in one buffer.
        let both = try answer(written(state)[0], .textMap(["images": .array([])])) + answer(written(echo)[0], .textMap(["r": .text("a")]))
        let orders = client.received(both, at: start)
        #expect(orders.count == 2)
        guard case .completed(stateTag, .success(let first)) = orders[0], case .completed(echoTag, .success(let second)) = orders[1] else {
            Issue.record("\(orders)")
            return
        }
        #expect(try SMPImageState(body: first.body).images.isEmpty)
        #expect(try SMPEchoResponse(body: second.body).text == "a")
        #expect(client.waitingCount == 0 && client.nextDeadline == nil)
    }

    /// Reassembly: one response drip-fed a byte at a time, and split at every point.
    @Test func responsesAreReassembledFromAnySplit() throws {
        var base = client()
        let (_, echo) = try base.send(.echo("hello"), at: start)
        let response = try answer(written(echo)[0], .textMap(["r": .text("hello")]))
        for split in 0...response.count {
            var client = base
            var orders = client.received(response[..<split], at: start)
            orders += client.received(response[split...], at: start)
            #expect(orders.count == 1 && orders.allSatisfy { if case .completed(_, .success) = $0 { true } else { false } }, "split \(split)")
        }
        var drip = base
        var orders: [SMPClient.Order] = []
        for byte in response { orders += drip.received([byte], at: start) }
        #expect(orders.count == 1)
    }

    /// Garbage (reserved bits, a request where a response belongs, an unknown version) is discarded, not matched.
    @Test func garbageIsDiscarded() throws {
        var client = client()
        _ = try client.send(.echo("a"), at: start)
        #expect(client.received(hexBytes("e3000000000000000000"), at: start) == [.discarded(SMPDecodeError(.reservedBitsSet, at: 0))])
        #expect(client.received(hexBytes("0a00000000000000a0"), at: start) == [.discarded(SMPDecodeError(.notAResponse, at: 0))])
        #expect(client.received(hexBytes("1300000000000000"), at: start) == [.discarded(SMPDecodeError(.unknownVersion, at: 0))])
        // A response whose body is not CBOR is discarded too, and the next one is still read.
        let orders = client.received(hexBytes("0b000001000000001c"), at: start)
        #expect(orders == [.discarded(SMPDecodeError(.invalidCBOR, at: 8, detail: "reservedAdditionalInfo"))])
        #expect(client.waitingCount == 1)
    }

    /// Rule 3: an unanswered request is written again with the same bytes after its time-out, then fails; a late
    /// answer to it after that is unmatched.
    @Test func lostResponsesAreRetriedThenTimeOut() throws {
        var client = client(retries: 2)
        let (tag, orders) = try client.send(.echo("a"), at: start)
        let request = written(orders)
        #expect(client.nextDeadline == start.advanced(by: .seconds(2)))
        #expect(client.handleTimeout(at: start.advanced(by: .seconds(1))).isEmpty, "not yet")
        #expect(written(client.handleTimeout(at: start.advanced(by: .seconds(2)))) == request)
        // The retry has its own full time-out.
        #expect(client.nextDeadline == start.advanced(by: .seconds(4)))
        #expect(client.handleTimeout(at: start.advanced(by: .seconds(3))).isEmpty)
        #expect(written(client.handleTimeout(at: start.advanced(by: .seconds(4)))) == request)
        #expect(client.handleTimeout(at: start.advanced(by: .seconds(6))) == [.completed(tag, .failure(.timedOut))])
        let late = try answer(request[0], .textMap(["r": .text("a")]))
        #expect(client.received(late, at: start.advanced(by: .seconds(7))) == [.unmatched(try #require(try SMPHeader(late)))])
        // A retried request answered twice (the first answer was only late): one completion, then unmatched.
        var twice = self.client(retries: 1)
        let (again, sent) = try twice.send(.echo("b"), at: start)
        _ = twice.handleTimeout(at: start.advanced(by: .seconds(2)))
        let reply = try answer(written(sent)[0], .textMap(["r": .text("b")]))
        #expect(twice.received(reply, at: start) == [.completed(again, .success(try SMPResponse(message: reply)))])
        #expect(twice.received(reply, at: start) == [.unmatched(try #require(try SMPHeader(reply)))])
    }

    /// Rule 4.
    @Test func connectionLossFailsEveryWaitingRequest() throws {
        var client = client()
        let (a, _) = try client.send(.echo("a"), at: start)
        let (b, _) = try client.send(.imageState, at: start)
        _ = client.received(hexBytes("0300"), at: start)  // a partial response, dropped with the connection
        #expect(client.connectionLost() == [.completed(a, .failure(.connectionLost)), .completed(b, .failure(.connectionLost))])
        #expect(client.waitingCount == 0 && client.nextDeadline == nil)
        let (_, echo) = try client.send(.echo("c"), at: start)
        let orders = client.received(try answer(written(echo)[0], .textMap(["r": .text("c")])), at: start)
        #expect(orders.count == 1, "the partial bytes before the loss do not corrupt the next response")
    }

    /// Rule 2: split into writes only where the device reassembles; otherwise refused before anything is sent.
    @Test func requestsAreSplitOnlyWhereTheDeviceReassembles() throws {
        let chunk = SMPRequest.imageUpload(SMPUploadChunk(offset: 100, data: Array(repeating: 9, count: 100)[...]))
        var plain = client(writeLimit: 20)
        #expect(throws: SMPClientError.tooLarge(chunk.encodedSize)) { try plain.send(chunk, at: start) }
        #expect(plain.waitingCount == 0)
        var reassembling = client(writeLimit: 20, reassembles: true)
        let (_, orders) = try reassembling.send(chunk, at: start)
        let writes = written(orders)
        #expect(writes.allSatisfy { $0.count <= 20 } && writes.dropLast().allSatisfy { $0.count == 20 })
        #expect(Array(writes.joined()) == chunk.encoded(version: .v2, sequence: 0))
    }
}
