// libFuzzer target for the simulated MCUmgr device (Sources/Simulation/SMPDeviceModel): its request parsing, the
// image group (upload, state write, erase) and MCUboot's slots across resets, and SlotImage's reading of whatever
// lands in the secondary slot.
//
// Input layout: records of [u16 big-endian length][that many bytes]; each record is one datagram handed to
// SMPDevice.handle, and a record of length 0 is a reset. The device starts on a valid image built here.
//
// Traps (real bugs): an answer that is not a well-formed SMP response to the request (header, sequence, group,
// command, CBOR map body); a device with no running image, or whose running image fails its own hash check after a
// reset (MCUboot must never boot an image that does not verify).
//
// The same records then go, as GATT writes, through SMPBluetoothServer (Zephyr's SMP Bluetooth transport in front of
// a second device): the first input byte picks the ATT MTU (23 + byte) and, by its low bit, whether the device
// reassembles. Traps: a notification over MTU − 3 or empty; notifications that do not join into one SMP response;
// a partial request longer than the device's buffer.

import CBOR
import SMP
import SMPDeviceModel

/// A minimal MCUboot image: 32-byte header (hdr_size 32, no protected TLVs, body 64 bytes), the body, and an
/// unprotected TLV area holding the SHA256 TLV over header and body (MCUboot docs/design.md, "Image Format").
func factoryImage() -> SlotImage {
    var bytes: [UInt8] = [0x3D, 0xB8, 0xF3, 0x96, 0, 0, 0, 0, 32, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    bytes += (0..<64).map { UInt8($0) }
    // SHA-256 of the 96 bytes above (Python's hashlib.sha256), so that the fuzzer needs no crypto package.
    let digest: [UInt8] = [
        0xE2, 0x5B, 0x1F, 0x7F, 0x3E, 0x82, 0x85, 0x58, 0x25, 0xF7, 0x54, 0xF0, 0x72, 0x0C, 0xBA, 0x8F, 0x37, 0x0D, 0xEA, 0x3E, 0xF7, 0x6D, 0xC1, 0x1E, 0xA5, 0x29, 0xB8, 0xD2, 0x1D, 0x52, 0x46, 0x46,
    ]
    bytes += [0x07, 0x69, 40, 0, 0x10, 0, 32, 0] + digest
    guard let image = SlotImage(bytes) else { fatalError("the fuzzer's factory image does not parse") }
    return image
}

let factory = factoryImage()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    var device = SMPDevice(configuration: .init(bufferSize: 2048, bufferCount: 4, slotSize: 4096), factoryImage: factory)
    _ = SlotImage(input)
    var offset = 0
    while offset + 2 <= input.count {
        let length = Int(input[offset]) << 8 | Int(input[offset + 1])
        offset += 2
        let end = min(offset + length, input.count)
        let datagram = Array(input[offset..<end])
        offset = end
        guard !datagram.isEmpty else {
            device.reset()
            let running = device.slots.primary
            let check = SlotImage(running.bytes)
            if check != running { fatalError("the running image no longer reads as itself") }
            continue
        }
        guard let answer = device.handle(datagram) else { continue }
        guard let request = try? SMPHeader(datagram) else { fatalError("answered bytes that are not a request header") }
        let response: SMPResponse
        do {
            response = try SMPResponse(message: answer)
        } catch {
            fatalError("the device's answer is not a response: \(error)")
        }
        let header = response.header
        if header.sequence != request.sequence || header.group != request.group || header.command != request.command
            || header.operation != request.operation.response || header.version != request.version
        {
            fatalError("the answer does not match its request")
        }
    }
    bluetooth(input)
    return 0
}

func bluetooth(_ input: [UInt8]) {
    guard let first = input.first else { return }
    let mtu = 23 + Int(first)
    var server = SMPBluetoothServer(
        device: SMPDevice(configuration: .init(bufferSize: 512, bufferCount: 4, slotSize: 4096), factoryImage: factory),
        reassembles: first & 1 == 0)
    var offset = 1
    while offset + 2 <= input.count {
        let length = Int(input[offset]) << 8 | Int(input[offset + 1])
        offset += 2
        let end = min(offset + length, input.count)
        let write = Array(input[offset..<end])
        offset = end
        guard !write.isEmpty else {
            server.linkLost()
            continue
        }
        if case .answered(let notifications, _) = server.write(write, attMTU: mtu) {
            if notifications.contains(where: { $0.isEmpty || $0.count > mtu - 3 }) { fatalError("a notification over MTU - 3, or empty") }
            if (try? SMPResponse(message: Array(notifications.joined()))) == nil { fatalError("the notifications are not one response") }
        }
        if server.collectedByteCount > server.device.configuration.bufferSize { fatalError("a partial request beyond the buffer") }
    }
}
