import CBOR
import SMP
import Testing

/// SMP messages from public sources, byte for byte:
///  - LeBlue/cmcumgr-client, tests/test_cbor.c (Matthias Wauer, Apache-2.0): requests its C client encodes, and
///    responses its parser reads (zcbor-style indefinite maps and definite ones);
///  - LeBlue/cmcumgr-client, tests/test_mgmt_img_upload.c: the first upload request (indefinite map);
///  - the smp Python package (JPHutchins/smp), tests/test_regressions.py `test_smpclient_41`: a legacy upload
///    response with `rc` (smpclient issue 41).
struct GoldenVectorTests {
    // MARK: Requests Tether encodes identically

    /// test_cbor.c `test_encode_mgmt_os_reset`, `test_encode_mgmt_img_erase`, `test_encode_mgmt_img_state_get_list`:
    /// empty-bodied requests, SMP v1, sequence 0.
    @Test func emptyRequestsEncodeByteForByte() {
        #expect(hexString(SMPRequest.reset().encoded(version: .v1, sequence: 0)) == "0200000100000005a0")
        #expect(hexString(SMPRequest.imageErase().encoded(version: .v1, sequence: 0)) == "0200000100010005a0")
        #expect(hexString(SMPRequest.imageState.encoded(version: .v1, sequence: 0)) == "0000000100010000a0")
    }

    /// test_cbor.c `test_encode_mgmt_os_echo`, `test_encode_mgmt_img_state_set_confirm`, and
    /// test_mgmt_img_upload.c's upload start (not `test_encode_mgmt_img_state_set_test*`: those send the hash as
    /// `sha`, where Zephyr's img_mgmt_state_write reads `hash`, as the smp package and Tether send it): the C client
    /// writes indefinite maps in its own key order; Tether writes definite maps in RFC 8949 §4.2.1 order. The
    /// headers agree except for the length, and the bodies decode to the same pairs.
    @Test func requestsAgreeWithTheCClientInMeaning() throws {
        let hash = Array("0123456789ABCDEF0123456789ABCDEF".utf8)
        let cases: [(SMPRequest, [UInt8])] = [
            (.echo("Hallo"), pieces("0x020000" + "0a00000000", "0xbf", "ad", "0x65", "Hallo", "0xff")),
            (.imageStateWrite(hash: nil, confirm: true), pieces("0x0200000b00010000", "0xbf", "gconfirm", "0xf5ff")),
            (.imageUpload(SMPUploadChunk(
                offset: 0, data: Array("012345678901".utf8)[...], first: .init(length: 20, sha: hash))),
             pieces("0x0200004400010001", "0xbf", "cshaX", "0x20", "0123456789ABCDEF0123456789ABCDEF",
                    "coff", "0x00", "clen", "0x14", "ddataL", "012345678901", "0xff")),
        ]
        for (request, theirs) in cases {
            let ours = request.encoded(version: .v1, sequence: 0)
            let theirHeader = try #require(try SMPHeader(theirs))
            let ourHeader = try #require(try SMPHeader(ours))
            #expect(Int(theirHeader.length) == theirs.count - 8, "the vector's own length field")
            #expect(ourHeader.operation == theirHeader.operation && ourHeader.group == theirHeader.group
                && ourHeader.command == theirHeader.command && ourHeader.version == theirHeader.version)
            let theirBody = try CBORDecoder().decode(theirs[8...])
            let ourBody = try CBORDecoder().decode(ours[8...])
            #expect(Set(try #require(theirBody.mapValue)) == Set(try #require(ourBody.mapValue)), "\(request)")
        }
    }

    // MARK: Responses Tether reads

    /// test_cbor.c `test_mgmt_os_echo_rsp_valid` (indefinite) and `..._alt_enc` (definite).
    @Test func echoResponses() throws {
        for message in [pieces("0x0300000a00000000", "0xbf", "are", "Hallo", "0xff"), pieces("0x0300000900000000", "0xa1", "are", "Hallo")] {
            let response = try SMPResponse(message: message)
            #expect(response.header.operation == .writeResponse && response.header.group == SMPGroup.os)
            #expect(try response.deviceError() == nil)
            #expect(try SMPEchoResponse(body: response.body).text == "Hallo")
        }
        // `..._valid_maxlen`: a 128-character answer (text head 0x78 0x80). The C test's header length (0x16) is
        // not its body's (0x86); its parser does not check, Tether's does, so the length is corrected here.
        let alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        let long = alphabet + alphabet + "abcd"
        let maxlen = pieces("0x0300008600000000", "0xbf", "arx", "0x80", long, "0xff")
        #expect(try SMPEchoResponse(body: SMPResponse(message: maxlen).body).text == long)
    }

    /// test_cbor.c's failing echo cases: missing key, wrong type, not a map, and a partial packet.
    @Test func malformedEchoResponsesAreRefused() throws {
        let missingKey = try SMPResponse(message: pieces("0x0300000500000000", "0xbf", "ad`", "0xff"))
        #expect(throws: SMPDecodeError(.invalidField, at: 8, detail: "r")) { try SMPEchoResponse(body: missingKey.body) }
        // (The C test's header says 5 bytes for this 6-byte body; its parser does not check. Corrected here.)
        let wrongType = try SMPResponse(message: pieces("0x0300000600000000", "0xbf", "ar", "0x1821ff"))
        #expect(throws: SMPDecodeError.self) { try SMPEchoResponse(body: wrongType.body) }
        #expect(throws: SMPDecodeError(.bodyNotAMap, at: 8)) { try SMPResponse(message: pieces("0x0300000100000000", "0x80")) }
        let partial = pieces("0x0300000500000000", "0xbf", "ar")
        #expect(throws: SMPDecodeError.self) { try SMPResponse(message: partial) }
        var reassembler = SMPReassembler()
        reassembler.append(partial)
        #expect(try reassembler.next() == nil, "a partial packet is 'need more bytes' to the reassembler")
    }

    /// test_cbor.c `test_mgmt_rsp_get_rc_*`: `{rc: 0}` is success, `{rc: 6}` is MGMT_ERR_EBADSTATE, both encodings;
    /// `{off: 0}` carries no rc.
    @Test func rcErrors() throws {
        for body in [pieces("0xbf", "brc", "0x00ff"), pieces("0xa1", "brc", "0x00")] {
            #expect(try SMPResponse(header: header(.writeResponse, group: 0, length: body.count), body: CBORDecoder().decode(body)).deviceError() == nil)
        }
        for body in [pieces("0xbf", "brc", "0x06ff"), pieces("0xa1", "brc", "0x06")] {
            let error = try #require(try SMPResponse(header: header(.writeResponse, group: 0, length: body.count), body: CBORDecoder().decode(body)).deviceError())
            #expect(error.mcumgrError == .EBADSTATE && error.name == "MGMT_ERR_EBADSTATE" && error.group == nil)
        }
        let offOnly = try CBORDecoder().decode(pieces("0xa1", "coff", "0x00"))
        #expect(try SMPResponse(header: header(.writeResponse, group: 1, length: 5), body: offOnly).deviceError() == nil)
    }

    /// test_cbor.c `test_mgmt_img_state_parse`: two slots, definite maps.
    @Test func imageStateResponse() throws {
        let hash = (0..<32).map { UInt8($0) }
        func slot(_ number: String, _ flags: String) -> [UInt8] {
            pieces("0xa8", "dslot", "0x" + number, "gversione1.2.3", "dhashX ") + hash
                + pieces("hbootable", "0xf5", "ipermanent", "0x" + flags, "iconfirmed", "0x" + flags, "factive", "0x" + flags, "gpending", "0xf4")
        }
        let message = pieces("0x010000e300010000", "0xa1", "fimages", "0x82") + slot("00", "f5") + slot("01", "f4")
        let response = try SMPResponse(message: message)
        #expect(response.header.operation == .readResponse && response.header.command == SMPImageCommand.state)
        let state = try SMPImageState(body: response.body)
        var primary = SMPImageSlotState(slot: 0, version: "1.2.3", hash: hash)
        primary.bootable = true
        primary.permanent = true
        primary.confirmed = true
        primary.active = true
        var secondary = SMPImageSlotState(slot: 1, version: "1.2.3", hash: hash)
        secondary.bootable = true
        #expect(state.images == [primary, secondary])
    }

    /// smp tests/test_regressions.py `test_smpclient_41`: a legacy upload response `{_ rc: 0, off: 165}`, v1,
    /// sequence 2.
    @Test func legacyUploadResponseWithRc() throws {
        let message = pieces("0x0300000c00010201", "0xbf", "brc", "0x00", "coff", "0x18a5ff")
        let response = try SMPResponse(message: message)
        #expect(response.header == SMPHeader(version: .v1, operation: .writeResponse, length: 12, group: 1, sequence: 2, command: 1))
        #expect(try response.deviceError() == nil)
        #expect(try SMPUploadResponse(body: response.body) == SMPUploadResponse(offset: 165))
    }

    /// Zephyr "SMP Protocol Specification", "Minimal response": a v2 group error is `{err: {group, rc}}`.
    @Test func v2GroupErrors() throws {
        let body = CBORValue.textMap(["err": .textMap(["group": .unsigned(1), "rc": .unsigned(9)])])
        let error = try #require(try SMPResponse(header: header(.writeResponse, group: 1, length: 0, version: .v2), body: body).deviceError())
        #expect(error == SMPDeviceError(group: 1, rc: 9) && error.name == "IMG_MGMT_ERR_NO_FREE_SLOT" && error.imageError == .NO_FREE_SLOT)
        let os = try #require(try SMPResponse(header: header(.readResponse, group: 0, length: 0, version: .v2),
            body: .textMap(["err": .textMap(["group": .unsigned(0), "rc": .unsigned(3)])])).deviceError())
        #expect(os.name == "OS_MGMT_ERR_QUERY_YIELDS_NO_ANSWER")
        #expect(SMPDeviceError(group: 1, rc: 999).name == "IMG_MGMT_ERR_999")
        #expect(SMPDeviceError(group: 9, rc: 2).name == "GROUP_9_ERR_2")
        // An SMP-level error stays `rc` in v2, with its reason.
        let smpLevel = try #require(try SMPResponse(header: header(.readResponse, group: 0, length: 0, version: .v2),
            body: .textMap(["rc": .unsigned(8), "rsn": .text("no")])).deviceError())
        #expect(smpLevel == SMPDeviceError(rc: 8, reason: "no") && smpLevel.name == "MGMT_ERR_ENOTSUP")
        // A malformed err is the device's protocol error, not a crash or a success.
        #expect(throws: SMPDecodeError.field("err.rc")) {
            try SMPResponse(header: header(.readResponse, group: 0, length: 0), body: .textMap(["err": .textMap(["group": .unsigned(0)])])).deviceError()
        }
    }

    /// Bootloader information, query "mode" (Zephyr "SMP OS management group", "Bootloader information"; the smp
    /// package's `MCUbootModeQueryResponse` has the same keys, `mode` and `no-downgrade`): MCUboot's mode 3 is
    /// swap without scratch. Unknown keys are skipped; a wrong type is the device's error.
    @Test func bootloaderModeAnswer() throws {
        let body = CBORValue.textMap(["mode": .unsigned(3), "no-downgrade": .bool(true), "extra": .null])
        #expect(try SMPBootloaderInfo(body: body) == SMPBootloaderInfo(mode: 3, noDowngrade: true))
        #expect(try SMPBootloaderInfo(body: .textMap(["mode": .integer(-1)])).mode == -1)
        #expect(throws: SMPDecodeError.field("no-downgrade")) { try SMPBootloaderInfo(body: .textMap(["no-downgrade": .unsigned(1)])) }
        #expect(hexString(SMPRequest.bootloaderInfo(query: "mode").encoded(version: .v2, sequence: 1)) == "0800000c00000108a1657175657279646d6f6465")
    }

    func header(_ operation: SMPOperation, group: UInt16, length: Int, version: SMPVersion = .v1) -> SMPHeader {
        SMPHeader(version: version, operation: operation, length: UInt16(length), group: group, sequence: 0, command: 0)
    }
}

extension SMPDecodeError {
    static func field(_ name: String) -> SMPDecodeError { SMPDecodeError(.invalidField, at: 8, detail: name) }
}
