import CBOR
import Crypto
import SMP
import SMPDeviceModel
import Testing

/// The simulated device, pure: requests as bytes in, answers as bytes out. Images are the committed imgtool fixtures
/// (Tests/MCUbootImageTests/make-images.sh): ed25519-hash.img (-v 1.2.3+4) runs; ecdsa-p256-hash.img (-v 0.9.12+3)
/// is uploaded.
@Suite struct SMPDeviceTests {
    struct Harness {
        var device: SMPDevice
        var sequence: UInt8 = 0
        var version = SMPVersion.v2

        init(bufferSize: Int = 1024, flash: SMPDevice.FlashTiming = .instant) throws {
            device = SMPDevice(
                configuration: .init(bufferSize: bufferSize, bufferCount: 4, flash: flash),
                factoryImage: try #require(SlotImage(try Fixtures.image("ed25519-hash"))))
        }

        mutating func send(_ request: SMPRequest) throws -> SMPResponse {
            sequence &+= 1
            let handled = device.handle(request.encoded(version: version, sequence: sequence))
            let answer = try #require(handled)
            let response = try SMPResponse(message: answer)
            #expect(response.header.sequence == sequence && response.header.group == request.group && response.header.command == request.command)
            #expect(response.header.version == version)
            return response
        }

        mutating func state() throws -> [SMPImageSlotState] { try SMPImageState(body: try send(.imageState).body).images }

        /// The whole image in chunks of `chunk` bytes; returns the last answer.
        mutating func upload(_ image: [UInt8], chunk: Int = 400) throws -> SMPUploadResponse {
            let sha = Array(SHA256.hash(data: image))
            var offset = 0
            var last = SMPUploadResponse(offset: 0)
            while offset < image.count {
                let end = min(offset + chunk, image.count)
                let first = offset == 0 ? SMPUploadChunk.FirstChunkFields(length: image.count, sha: sha) : nil
                last = try SMPUploadResponse(body: try send(.imageUpload(SMPUploadChunk(offset: offset, data: image[offset..<end], first: first))).body)
                #expect(last.offset == end)
                offset = last.offset
            }
            return last
        }
    }

    static func tlvHash(_ name: String) throws -> [UInt8] { try #require(SlotImage(try Fixtures.image(name))).hash }

    @Test func stateListsTheRunningImageWithItsVersionAndSHA256TLV() throws {
        var harness = try Harness()
        let images = try harness.state()
        #expect(images.count == 1)
        #expect(images[0].slot == 0 && images[0].version == "1.2.3.4")
        #expect(images[0].active && images[0].confirmed && images[0].bootable && !images[0].pending)
        // The SHA256 TLV is the digest over header, body and protected TLVs (MCUboot docs/design.md): recomputed here
        // from the file's header fields, and not the hash of the whole file.
        let file = try Fixtures.image("ed25519-hash")
        let hashed = Int(file[8]) | Int(file[9]) << 8
        let body = Int(file[12]) | Int(file[13]) << 8 | Int(file[14]) << 16 | Int(file[15]) << 24
        let protected = Int(file[10]) | Int(file[11]) << 8
        #expect(images[0].hash == Array(SHA256.hash(data: file[..<(hashed + body + protected)])))
        #expect(images[0].hash != Array(SHA256.hash(data: file)))
    }

    @Test func echoAndParameters() throws {
        var harness = try Harness(bufferSize: 777)
        #expect(try SMPEchoResponse(body: try harness.send(.echo("hello")).body).text == "hello")
        #expect(try SMPParameters(body: try harness.send(.parameters).body) == SMPParameters(bufferSize: 777, bufferCount: 4))
    }

    @Test func aTestedImageRunsOnceAndRevertsUnlessConfirmed() throws {
        var harness = try Harness()
        let old = try Self.tlvHash("ed25519-hash")
        let new = try Self.tlvHash("ecdsa-p256-hash")
        #expect(try harness.upload(try Fixtures.image("ecdsa-p256-hash")).match == true)
        let uploaded = try #require(try harness.state().last)
        #expect(uploaded.slot == 1 && uploaded.version == "0.9.12.3" && uploaded.hash == new && !uploaded.pending)
        let marked = try SMPImageState(body: try harness.send(.imageStateWrite(hash: new, confirm: false)).body).images
        #expect(marked[1].pending && !marked[1].permanent)

        _ = try harness.send(.reset())
        var images = try harness.state()
        #expect(images[0].hash == new && images[0].active && !images[0].confirmed)
        #expect(images[1].hash == old && images[1].confirmed && !images[1].active)

        // Not confirmed: the next reset goes back.
        _ = try harness.send(.reset())
        images = try harness.state()
        #expect(images[0].hash == old && images[0].active && images[0].confirmed)
        #expect(images[1].hash == new && !images[1].pending && !images[1].confirmed)
    }

    @Test func aConfirmedImageIsPermanent() throws {
        var harness = try Harness()
        let new = try Self.tlvHash("ecdsa-p256-hash")
        _ = try harness.upload(try Fixtures.image("ecdsa-p256-hash"))
        _ = try harness.send(.imageStateWrite(hash: new, confirm: false))
        _ = try harness.send(.reset())
        let confirmed = try SMPImageState(body: try harness.send(.imageStateWrite(hash: nil, confirm: true)).body).images
        #expect(confirmed[0].hash == new && confirmed[0].confirmed && !confirmed[1].confirmed)
        _ = try harness.send(.reset())
        #expect(try harness.state()[0].hash == new)
    }

    @Test func aPermanentMarkSwapsConfirmed() throws {
        var harness = try Harness()
        let new = try Self.tlvHash("ecdsa-p256-hash")
        _ = try harness.upload(try Fixtures.image("ecdsa-p256-hash"))
        let marked = try SMPImageState(body: try harness.send(.imageStateWrite(hash: new, confirm: true)).body).images
        #expect(marked[1].pending && marked[1].permanent)
        _ = try harness.send(.reset())
        let images = try harness.state()
        #expect(images[0].hash == new && images[0].confirmed)
    }

    @Test func anImageWhoseHashIsWrongIsNotBooted() throws {
        var harness = try Harness()
        var image = try Fixtures.image("ecdsa-p256-hash")
        image[0x200 + 10] ^= 0x01  // a body byte: the SHA256 TLV no longer matches
        let tampered = try #require(SlotImage(image)).hash
        _ = try harness.upload(image)
        _ = try harness.send(.imageStateWrite(hash: tampered, confirm: false))
        _ = try harness.send(.reset())
        let images = try harness.state()
        #expect(images.map(\.version) == ["1.2.3.4"], "MCUboot boots the old image and erases the one that failed")
        #expect(images[0].confirmed)
    }

    @Test func uploadResumesWithTheSameShaAndCorrectsAWrongOffset() throws {
        var harness = try Harness()
        let image = try Fixtures.image("ecdsa-p256-hash")
        let sha = Array(SHA256.hash(data: image))
        let first = SMPUploadChunk.FirstChunkFields(length: image.count, sha: sha)
        var answer = try SMPUploadResponse(body: try harness.send(.imageUpload(SMPUploadChunk(offset: 0, data: image[0..<300], first: first))).body)
        #expect(answer.offset == 300)
        answer = try SMPUploadResponse(body: try harness.send(.imageUpload(SMPUploadChunk(offset: 300, data: image[300..<600]))).body)
        #expect(answer.offset == 600)
        // A chunk for the wrong offset is answered with the offset the device expects.
        answer = try SMPUploadResponse(body: try harness.send(.imageUpload(SMPUploadChunk(offset: 900, data: image[900..<1000]))).body)
        #expect(answer.offset == 600)
        // Offset 0 with the same sha: the device answers where it stands (resume), without erasing.
        let erases = harness.device.erases
        answer = try SMPUploadResponse(body: try harness.send(.imageUpload(SMPUploadChunk(offset: 0, data: image[0..<300], first: first))).body)
        #expect(answer.offset == 600)
        #expect(harness.device.erases == erases)
        // Another sha starts over.
        let other = SMPUploadChunk.FirstChunkFields(length: image.count, sha: Array(repeating: 7, count: 32))
        answer = try SMPUploadResponse(body: try harness.send(.imageUpload(SMPUploadChunk(offset: 0, data: image[0..<300], first: other))).body)
        #expect(answer.offset == 300)
        #expect(harness.device.erases == erases + 1)
    }

    @Test func aResetForgetsTheUploadInProgress() throws {
        var harness = try Harness()
        let image = try Fixtures.image("ecdsa-p256-hash")
        let first = SMPUploadChunk.FirstChunkFields(length: image.count, sha: Array(SHA256.hash(data: image)))
        _ = try harness.send(.imageUpload(SMPUploadChunk(offset: 0, data: image[0..<300], first: first)))
        _ = try harness.send(.reset())
        #expect(harness.device.uploadOffset == nil)
        let answer = try SMPUploadResponse(body: try harness.send(.imageUpload(SMPUploadChunk(offset: 300, data: image[300..<600]))).body)
        #expect(answer.offset == 0)
    }

    @Test func errorsComeInTheFormTheRequestsVersionAsks() throws {
        var harness = try Harness()
        let running = try Self.tlvHash("ed25519-hash")
        // Marking the running image for test is refused.
        var response = try harness.send(.imageStateWrite(hash: running, confirm: false))
        #expect(try response.deviceError() == SMPDeviceError(group: SMPGroup.image, rc: ImageManagementError.IMAGE_SETTING_TEST_TO_ACTIVE_DENIED.rawValue))
        #expect(response.body["rc"] == nil)
        harness.version = .v1
        response = try harness.send(.imageStateWrite(hash: running, confirm: false))
        #expect(try response.deviceError() == SMPDeviceError(rc: MCUmgrError.EBADSTATE.rawValue))
        #expect(response.body["err"] == nil)
        // An unknown hash: v1 EINVAL; v2 IMG_MGMT_ERR_HASH_NOT_FOUND.
        response = try harness.send(.imageStateWrite(hash: Array(repeating: 1, count: 32), confirm: false))
        #expect(try response.deviceError() == SMPDeviceError(rc: MCUmgrError.EINVAL.rawValue))
        harness.version = .v2
        response = try harness.send(.imageStateWrite(hash: Array(repeating: 1, count: 32), confirm: false))
        #expect(try response.deviceError() == SMPDeviceError(group: SMPGroup.image, rc: ImageManagementError.HASH_NOT_FOUND.rawValue))
        // A command the device does not have: SMP-level ENOTSUP in both versions.
        response = try harness.send(SMPRequest(operation: .read, group: 9, command: 0, body: []))
        #expect(try response.deviceError() == SMPDeviceError(rc: MCUmgrError.ENOTSUP.rawValue))
    }

    @Test func anUploadOrEraseThatWouldDestroyTheFallbackImageIsRefused() throws {
        var harness = try Harness()
        let new = try Self.tlvHash("ecdsa-p256-hash")
        _ = try harness.upload(try Fixtures.image("ecdsa-p256-hash"))
        _ = try harness.send(.imageStateWrite(hash: new, confirm: false))
        // Pending: the secondary slot is in use.
        var response = try harness.send(.imageErase())
        #expect(try response.deviceError()?.imageError == .NO_FREE_SLOT)
        _ = try harness.send(.reset())
        // Running in test: the secondary holds the image a revert goes back to.
        let image = try Fixtures.image("ed25519-full-seccnt")
        response = try harness.send(
            .imageUpload(SMPUploadChunk(offset: 0, data: image[0..<300], first: .init(length: image.count, sha: Array(SHA256.hash(data: image))))))
        #expect(try response.deviceError()?.imageError == .NO_FREE_SLOT)
        // Confirmed: the slot is free again and erase works.
        _ = try harness.send(.imageStateWrite(hash: nil, confirm: true))
        response = try harness.send(.imageErase())
        #expect(try response.deviceError() == nil)
        #expect(try harness.state().count == 1)
    }

    @Test func theFirstChunkMustHoldAnImageHeaderThatFitsTheSlot() throws {
        var harness = try Harness()
        let image = try Fixtures.image("ecdsa-p256-hash")
        let first = SMPUploadChunk.FirstChunkFields(length: image.count, sha: Array(SHA256.hash(data: image)))
        var response = try harness.send(.imageUpload(SMPUploadChunk(offset: 0, data: image[0..<16], first: first)))
        #expect(try response.deviceError()?.imageError == .INVALID_IMAGE_HEADER)
        var garbage = image
        garbage[0] = 0
        response = try harness.send(.imageUpload(SMPUploadChunk(offset: 0, data: garbage[0..<300], first: first)))
        #expect(try response.deviceError()?.imageError == .INVALID_IMAGE_HEADER_MAGIC)
        let huge = SMPUploadChunk.FirstChunkFields(length: 0x6_0001, sha: first.sha)
        response = try harness.send(.imageUpload(SMPUploadChunk(offset: 0, data: image[0..<300], first: huge)))
        #expect(try response.deviceError()?.imageError == .INVALID_IMAGE_TOO_LARGE)
    }

    /// The flash's time, as the device reports it for the transport to wait: the first chunk erases the image's
    /// sectors (whole ones), every chunk writes its bytes, erase erases the whole slot, a state read costs nothing.
    @Test func flashTimeFollowsTheErasesAndWrites() throws {
        let flash = SMPDevice.FlashTiming(sectorSize: 4096, eraseTimePerSector: .milliseconds(85), writeTimePerKiB: .milliseconds(10))
        var harness = try Harness(flash: flash)
        let image = try Fixtures.image("ecdsa-p256-hash")
        let sha = Array(SHA256.hash(data: image))
        _ = try harness.send(.imageUpload(SMPUploadChunk(offset: 0, data: image[0..<512], first: .init(length: image.count, sha: sha))))
        let sectors = (image.count + 4095) / 4096
        #expect(harness.device.lastBusyTime == .milliseconds(85) * sectors + .milliseconds(5))
        _ = try harness.send(.imageUpload(SMPUploadChunk(offset: 512, data: image[512..<896], first: nil)))
        #expect(harness.device.lastBusyTime == .microseconds(3750))  // 384 bytes at 10 ms a KiB
        _ = try harness.state()
        #expect(harness.device.lastBusyTime == .zero)
        harness.device.reset()
        _ = try harness.send(.imageErase())
        #expect(harness.device.lastBusyTime == .milliseconds(85) * (0x6_0000 / 4096))
        #expect(SMPDevice.FlashTiming.nRF52840.erase(0x6_0000) == .milliseconds(85 * 96))
    }

    @Test func bytesThatAreNotOneWholeRequestAreDropped() throws {
        var harness = try Harness()
        let message = SMPRequest.echo("x").encoded(version: .v2, sequence: 1)
        #expect(harness.device.handle(Array(message.dropLast())) == nil)
        #expect(harness.device.handle(message + [0]) == nil)
        #expect(harness.device.handle([]) == nil)
        var response = message
        response[0] = SMPOperation.writeResponse.rawValue | 1 << 3
        #expect(harness.device.handle(response) == nil)
    }
}
