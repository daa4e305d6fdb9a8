import TetherDeviceModel
import Foundation
import LinkProtocol

/// The peripheral's own record of what it did, one JSON object per line, flushed at once: the scenario compares
/// it with what the gateway stored. A line is written before the fact takes effect on the link, so a hit that
/// reaches the gateway is always in the log.
final class EventLog: Sendable {
    private let handle: FileHandle

    init(url: URL) throws {
        FileManager.default.createFile(atPath: url.path, contents: nil)
        handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: 0)
    }

    func hitProduced(_ event: HitEvent) {
        write(["fact": "hit", "boot": Int(event.bootCounter), "sequence": Int(event.eventSequence),
               "ticks": Int(event.ticks), "duration": Int(event.durationMilliseconds), "intensity": Int(event.intensity)])
    }

    func hitsReleased(_ events: [HitEvent]) {
        for event in events {
            write(["fact": "released", "boot": Int(event.bootCounter), "sequence": Int(event.eventSequence)])
        }
    }

    /// Settings traffic (§7.11): SET_CONFIG applied or refused, CONFIG_DATA sent and acknowledged, with versions
    /// and frame numbers, so a run whose reported version went astray can be followed frame by frame.
    func settings(_ fact: SettingsFact) {
        switch fact {
        case .setConfigApplied(let config, let sequence):
            write(["fact": "set-config-applied", "version": Int(config.version), "sequence": Int(sequence.rawValue)])
        case .setConfigRefused(let version, let sequence, let key):
            write(["fact": "set-config-refused", "version": Int(version), "sequence": Int(sequence.rawValue), "key": Int(key)])
        case .reportSent(let config, let sequence, let retransmission):
            write(["fact": "config-data-sent", "version": Int(config.version), "sequence": Int(sequence.rawValue), "retransmission": retransmission])
        case .reportAcknowledged(let version, let sequence):
            write(["fact": "config-data-acked", "version": Int(version), "sequence": Int(sequence.rawValue)])
        }
    }

    func note(_ fact: String, _ fields: [String: any Sendable] = [:]) {
        var line: [String: any Sendable] = fields
        line["fact"] = fact
        write(line)
    }

    private func write(_ fields: [String: any Sendable]) {
        var line = fields
        line["at"] = Date().timeIntervalSince1970
        guard let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) else { return }
        handle.write(data + Data("\n".utf8))
    }
}
