import Foundation
import LinkProtocol

/// The devices' record of what the gateway ACKed, kept in a file (`SimulatorConfiguration.releasedLog`): one line
/// `<address> <serial> <boot> <sequence>` per event a firmware forgot, appended with one write(2) each before the
/// firmware goes on. A rig that cuts the power of the machine the simulator runs on keeps this file outside it
/// (the power-cut rig: a 9p share that qemu writes through to the host), so it outlives the simulator.
final class ReleasedEventLog: Sendable {
    private let descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSLocalizedDescriptionKey: "cannot open the released-event log \(path): \(String(cString: strerror(errno)))"])
        }
    }

    deinit { close(descriptor) }

    /// One write for all of `events`, so a line is never torn by another device's.
    func append(_ events: [HitEvent], address: String, serial: String) {
        guard !events.isEmpty else { return }
        let text = events.map { "\(address) \(serial) \($0.bootCounter) \($0.eventSequence)\n" }.joined()
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                // The oracle is gone: say so loudly rather than let a check pass on a partial record.
                FileHandle.standardError.write(Data("tether-sim: writing the released-event log failed: \(String(cString: strerror(errno)))\n".utf8))
                return
            }
            offset += written
        }
        bytes.removeAll()
    }
}
