/// A reason tetherd cannot start or keep running, said for the person reading the journal.
public struct DaemonError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
