import Crypto
import SMP
import SMPDeviceModel
import Testing

/// Zephyr's SMP Bluetooth transport on the device side (SMPBluetoothServer), pure: writes in, notifications out.
/// Requests are written out by hand from the SMP header layout (Zephyr "SMP Protocol Specification", "SMP message":
/// byte 0 = Ver (bits 3-4) | OP, flags, length u16 BE, group u16 BE, sequence, command) and RFC 8949's encodings; the
/// oracle for a response is the same device model answering the whole request at once, as over UDP.
@Suite struct SMPBluetoothServerTests {
    static func device(bufferSize: Int = 1024) throws -> SMPDevice {
        SMPDevice(
            configuration: .init(bufferSize: bufferSize, bufferCount: 4), factoryImage: try #require(SlotImage(try Fixtures.image("ed25519-hash"))))
    }

    /// OS group echo (group 0, command 0), SMP v2 write: `{"d": text}` (RFC 8949 §3.1: map of one pair, text strings
    /// with their length in the initial byte below 24, after 0x78 below 256, after 0x79 below 65,536).
    static func echo(_ text: String, sequence: UInt8 = 1) -> [UInt8] {
        let utf8 = Array(text.utf8)
        let textHead: [UInt8] =
            utf8.count < 24 ? [0x60 | UInt8(utf8.count)]
            : utf8.count < 256 ? [0x78, UInt8(utf8.count)] : [0x79, UInt8(utf8.count >> 8), UInt8(utf8.count & 0xFF)]
        let body: [UInt8] = [0xA1, 0x61, 0x64] + textHead + utf8
        return [0x0A, 0x00, UInt8(body.count >> 8), UInt8(body.count & 0xFF), 0x00, 0x00, sequence, 0x00] + body
    }

    /// OS group reset (command 5), SMP v2 write, empty map body (0xA0).
    static let reset: [UInt8] = [0x0A, 0x00, 0x00, 0x01, 0x00, 0x00, 0x09, 0x05, 0xA0]

    static func answer(_ outcome: SMPBluetoothServer.WriteOutcome) -> (notifications: [[UInt8]], rebooted: Bool)? {
        if case .answered(let notifications, let rebooted) = outcome { return (notifications, rebooted) }
        return nil
    }

    @Test func aRequestSplitAtEveryBoundaryIsAnsweredOnceAndWhole() throws {
        let request = Self.echo("split me anywhere, the header says how long I am")
        var reference = try Self.device()
        let answered = reference.handle(request)
        let expected = try #require(answered)
        for cut in 1..<request.count {
            var server = SMPBluetoothServer(device: try Self.device())
            let first = server.write(Array(request[..<cut]), attMTU: 247)
            guard cut >= SMPHeader.size else {
                // smp_reassembly_collect: a first fragment without the whole header is -ENODATA, dropped.
                #expect(first == .dropped(.fragmentShorterThanHeader), "cut at \(cut)")
                continue
            }
            #expect(first == .collecting(missing: request.count - cut), "cut at \(cut)")
            let second = try #require(Self.answer(server.write(Array(request[cut...]), attMTU: 247)), "cut at \(cut)")
            #expect(second.notifications == [expected] && !second.rebooted, "cut at \(cut)")
            #expect(server.requestsAnswered == 1 && server.collectedByteCount == 0)
        }
    }

    @Test func aRequestDrippedByteByByteAfterItsHeaderIsAnswered() throws {
        let request = Self.echo("drip")
        var server = SMPBluetoothServer(device: try Self.device())
        #expect(server.write(Array(request[..<SMPHeader.size]), attMTU: 23) == .collecting(missing: request.count - SMPHeader.size))
        for index in SMPHeader.size..<(request.count - 1) {
            #expect(server.write([request[index]], attMTU: 23) == .collecting(missing: request.count - index - 1))
        }
        let answer = try #require(Self.answer(server.write([request[request.count - 1]], attMTU: 23)))
        // {"r": "drip"}: A1 61 72 64 "drip", 8 bytes of body behind a v2 write-response header echoing the sequence.
        #expect(answer.notifications.joined().elementsEqual([0x0B, 0x00, 0x00, 0x08, 0x00, 0x00, 0x01, 0x00, 0xA1, 0x61, 0x72, 0x64] + Array("drip".utf8)))
    }

    @Test func responsesLargerThanOneNotificationAreCutAtTheMTUMinusThree() throws {
        let request = Self.echo(String(repeating: "0123456789", count: 30))
        var reference = try Self.device()
        let answered = reference.handle(request)
        let expected = try #require(answered)
        for mtu in [23, 64, 247, 498] {
            var server = SMPBluetoothServer(device: try Self.device())
            let answer = try #require(Self.answer(server.write(request, attMTU: mtu)))
            #expect(Array(answer.notifications.joined()) == expected, "MTU \(mtu)")
            #expect(answer.notifications.dropLast().allSatisfy { $0.count == mtu - 3 }, "MTU \(mtu)")
            #expect((1...(mtu - 3)).contains(answer.notifications.last?.count ?? 0), "MTU \(mtu)")
            #expect(answer.notifications.count == (expected.count + mtu - 4) / (mtu - 3), "MTU \(mtu)")
        }
    }

    @Test func withoutReassemblyEveryWriteMustBeOneWholeRequest() throws {
        let request = Self.echo("one write, one request")
        var server = SMPBluetoothServer(device: try Self.device(), reassembles: false)
        #expect(server.write(Array(request[..<12]), attMTU: 247) == .dropped(.notARequest))
        #expect(server.write(Array(request[12...]), attMTU: 247) == .dropped(.notARequest))
        #expect(Self.answer(server.write(request, attMTU: 247)) != nil)
        #expect(server.writesDropped == 2 && server.requestsAnswered == 1)
    }

    @Test func aMessageLargerThanTheBufferIsDroppedAndTheNextOneIsAnswered() throws {
        var server = SMPBluetoothServer(device: try Self.device(bufferSize: 128))
        let large = Self.echo(String(repeating: "x", count: 200))
        // The first fragment's header announces 8 + 206 bytes > CONFIG_MCUMGR_TRANSPORT_NETBUF_SIZE: -ENOSR.
        #expect(server.write(Array(large[..<60]), attMTU: 64) == .dropped(.largerThanBuffer))
        #expect(server.collectedByteCount == 0)
        // The rest of it arrives as writes of its own and is not a header either: nothing sticks.
        let answer = try #require(Self.answer(server.write(Self.echo("fits", sequence: 2), attMTU: 64)))
        #expect(answer.notifications.first?[6] == 2)
    }

    @Test func aFragmentLongerThanWhatIsMissingDropsTheRequest() throws {
        let request = Self.echo("overrun")
        var server = SMPBluetoothServer(device: try Self.device())
        #expect(server.write(Array(request[..<10]), attMTU: 247) == .collecting(missing: request.count - 10))
        #expect(server.write(Array(request[10...]) + [0x00], attMTU: 247) == .dropped(.fragmentOverrunsMessage))
        #expect(server.collectedByteCount == 0)
        #expect(Self.answer(server.write(request, attMTU: 247)) != nil)
    }

    @Test func losingTheLinkDropsAPartialRequest() throws {
        let request = Self.echo("interrupted", sequence: 3)
        var server = SMPBluetoothServer(device: try Self.device())
        _ = server.write(Array(request[..<12]), attMTU: 247)
        server.linkLost()
        #expect(server.collectedByteCount == 0)
        // Reconnected, the client sends the request again, whole: answered once.
        let answer = try #require(Self.answer(server.write(request, attMTU: 247)))
        #expect(answer.notifications.count == 1 && answer.notifications[0][6] == 3)
    }

    @Test func aResetIsAnsweredAndThenTheDeviceReboots() throws {
        var server = SMPBluetoothServer(device: try Self.device())
        let echoed = try #require(Self.answer(server.write(Self.echo("before"), attMTU: 247)))
        #expect(!echoed.rebooted)
        let reset = try #require(Self.answer(server.write(Self.reset, attMTU: 247)))
        #expect(reset.rebooted)
        // The answer is an empty map behind a write-response header with the request's sequence (9).
        #expect(reset.notifications == [[0x0B, 0x00, 0x00, 0x01, 0x00, 0x00, 0x09, 0x05, 0xA0]])
        #expect(server.device.slots.resets == 1)
    }

    /// An upload as smpclient sends one over BLE: requests up to buf_size, each cut into writes of MTU − 3. The slot
    /// then holds the image byte for byte and lists its SHA256 TLV.
    @Test func anUploadInMTUSizedWritesFillsTheSecondarySlot() throws {
        let image = try Fixtures.image("ecdsa-p256-hash")
        let sha = Array(SHA256.hash(data: image))
        var server = SMPBluetoothServer(device: try Self.device(bufferSize: 512))
        var offset = 0
        var sequence: UInt8 = 0
        while offset < image.count {
            sequence &+= 1
            let end = min(offset + 400, image.count)
            let first = offset == 0 ? SMPUploadChunk.FirstChunkFields(length: image.count, sha: sha) : nil
            let request = SMPRequest.imageUpload(SMPUploadChunk(offset: offset, data: image[offset..<end], first: first))
                .encoded(version: .v2, sequence: sequence)
            #expect(request.count <= 512)
            var answer: (notifications: [[UInt8]], rebooted: Bool)?
            for write in SMPBluetoothServer.notifications(request, attMTU: 247) {
                answer = Self.answer(server.write(write, attMTU: 247))
            }
            let response = try SMPResponse(message: Array(try #require(answer).notifications.joined()))
            offset = try SMPUploadResponse(body: response.body).offset
            #expect(offset == end)
        }
        #expect(server.device.slots.secondary?.bytes == image)
        #expect(server.device.slots.secondary?.hash == (try SMPDeviceTests.tlvHash("ecdsa-p256-hash")))
    }
}
