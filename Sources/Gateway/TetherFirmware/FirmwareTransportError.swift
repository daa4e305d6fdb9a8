import SMP

/// Why a firmware operation did not complete, by who is at fault; the same over UDP and over BLE.
public enum FirmwareTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The transport: over UDP the host cannot be resolved or the network refused a datagram; over BLE BlueZ refused
    /// a call, or the device has no SMP service.
    case transport(String)
    /// The client core: no answer after every retry, a request too large for the device.
    case client(SMPClientError)
    /// The device answered with an error.
    case device(SMPDeviceError)
    /// The device's answer is not what SMP says it should be.
    case malformed(SMPDecodeError)
    case upload(UploadFailure)

    public var description: String {
        switch self {
        case .transport(let message): return message
        case .client(.timedOut): return "the device did not answer (every retry timed out)"
        case .client(.connectionLost): return "the link to the device was lost"
        case .client(let error): return "request failed: \(error)"
        case .device(let error): return "the device refused: \(error)"
        case .malformed(let error): return "the device's answer is malformed: \(error)"
        case .upload(.deviceStoppedAnswering(let offset)): return "the device stopped answering at offset \(offset)"
        case .upload(.device(let error)): return "the device refused the upload: \(error)"
        case .upload(let failure): return "upload failed: \(failure)"
        }
    }
}
