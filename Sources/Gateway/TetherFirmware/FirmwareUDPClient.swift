import SMP

/// The firmware commands a technician runs against a device reached over UDP, each one SMP request through the
/// client core (SMPUDPSession), its device error or malformed answer turned into a FirmwareUDPError. Blocking.
public final class FirmwareUDPClient {
    public let target: UDPTarget
    let session: SMPUDPSession

    public init(target: UDPTarget, configuration: SMPClient.Configuration = SMPUDPSession.configuration()) throws(FirmwareUDPError) {
        self.target = target
        session = try SMPUDPSession(host: target.host, port: target.port, configuration: configuration)
    }

    /// The request's answer when the device reports no error.
    func answer(_ request: SMPRequest) throws(FirmwareUDPError) -> SMPResponse {
        let response = try session.perform(request)
        let error: SMPDeviceError?
        do {
            error = try response.deviceError()
        } catch {
            throw .malformed(error)
        }
        if let error { throw .device(error) }
        return response
    }

    func decode<T>(_ make: () throws(SMPDecodeError) -> T) throws(FirmwareUDPError) -> T {
        do {
            return try make()
        } catch {
            throw .malformed(error)
        }
    }

    public func echo(_ text: String) throws(FirmwareUDPError) -> String {
        let response = try answer(.echo(text))
        return try decode { () throws(SMPDecodeError) in try SMPEchoResponse(body: response.body).text }
    }

    public func parameters() throws(FirmwareUDPError) -> SMPParameters {
        let response = try answer(.parameters)
        return try decode { () throws(SMPDecodeError) in try SMPParameters(body: response.body) }
    }

    public func imageState() throws(FirmwareUDPError) -> SMPImageState {
        try state(.imageState)
    }

    /// Marks the image with this SHA256 TLV hash to run once, on test, at the next reset.
    public func test(hash: [UInt8]) throws(FirmwareUDPError) -> SMPImageState {
        try state(.imageStateWrite(hash: hash, confirm: false))
    }

    /// Confirms the running image (hash nil), or makes the image with this hash permanent.
    public func confirm(hash: [UInt8]?) throws(FirmwareUDPError) -> SMPImageState {
        try state(.imageStateWrite(hash: hash, confirm: true))
    }

    public func reset() throws(FirmwareUDPError) { _ = try answer(.reset()) }

    public func erase() throws(FirmwareUDPError) { _ = try answer(.imageErase()) }

    private func state(_ request: SMPRequest) throws(FirmwareUDPError) -> SMPImageState {
        let response = try answer(request)
        return try decode { () throws(SMPDecodeError) in try SMPImageState(body: response.body) }
    }
}
