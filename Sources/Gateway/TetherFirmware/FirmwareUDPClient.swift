import SMP

/// The firmware commands a technician runs against a device reached over UDP, each one SMP request through the
/// client core (SMPUDPSession), its answer read by SMPCommandAnswer. Blocking.
public final class FirmwareUDPClient {
    public let target: UDPTarget
    let session: SMPUDPSession

    public init(target: UDPTarget, configuration: SMPClient.Configuration = SMPUDPSession.configuration()) throws(FirmwareTransportError) {
        self.target = target
        session = try SMPUDPSession(host: target.host, port: target.port, configuration: configuration)
    }

    public func echo(_ text: String) throws(FirmwareTransportError) -> String {
        try SMPCommandAnswer.echo(session.perform(.echo(text)))
    }

    public func parameters() throws(FirmwareTransportError) -> SMPParameters {
        try SMPCommandAnswer.parameters(session.perform(.parameters))
    }

    public func imageState() throws(FirmwareTransportError) -> SMPImageState {
        try SMPCommandAnswer.imageState(session.perform(.imageState))
    }

    /// Marks the image with this SHA256 TLV hash to run once, on test, at the next reset.
    public func test(hash: [UInt8]) throws(FirmwareTransportError) -> SMPImageState {
        try SMPCommandAnswer.imageState(session.perform(.imageStateWrite(hash: hash, confirm: false)))
    }

    /// Confirms the running image (hash nil), or makes the image with this hash permanent.
    public func confirm(hash: [UInt8]?) throws(FirmwareTransportError) -> SMPImageState {
        try SMPCommandAnswer.imageState(session.perform(.imageStateWrite(hash: hash, confirm: true)))
    }

    public func reset() throws(FirmwareTransportError) { _ = try SMPCommandAnswer.checked(session.perform(.reset())) }

    public func erase() throws(FirmwareTransportError) { _ = try SMPCommandAnswer.checked(session.perform(.imageErase())) }
}
