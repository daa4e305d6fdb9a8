import SMP

/// The typed answers to the commands a technician runs, the same whichever transport carried them: a device error
/// (Zephyr "SMP Protocol Specification", "Minimal response") or an answer that does not decode becomes a
/// `FirmwareTransportError` saying which side is at fault.
enum SMPCommandAnswer {
    /// The response when the device reports no error.
    static func checked(_ response: SMPResponse) throws(FirmwareTransportError) -> SMPResponse {
        let error: SMPDeviceError?
        do {
            error = try response.deviceError()
        } catch {
            throw .malformed(error)
        }
        if let error { throw .device(error) }
        return response
    }

    static func echo(_ response: SMPResponse) throws(FirmwareTransportError) -> String {
        let body = try checked(response).body
        return try decode { () throws(SMPDecodeError) in try SMPEchoResponse(body: body).text }
    }

    static func parameters(_ response: SMPResponse) throws(FirmwareTransportError) -> SMPParameters {
        let body = try checked(response).body
        return try decode { () throws(SMPDecodeError) in try SMPParameters(body: body) }
    }

    /// The answer to a state read or a state write (both answer with the slots).
    static func imageState(_ response: SMPResponse) throws(FirmwareTransportError) -> SMPImageState {
        let body = try checked(response).body
        return try decode { () throws(SMPDecodeError) in try SMPImageState(body: body) }
    }

    private static func decode<T>(_ make: () throws(SMPDecodeError) -> T) throws(FirmwareTransportError) -> T {
        do {
            return try make()
        } catch {
            throw .malformed(error)
        }
    }
}
