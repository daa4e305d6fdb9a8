import Crypto
import SMP
import TetherPrimitives

/// An ImageUploader joined to an SMPDeviceModel under a manual clock (style.md §1: quinn's `Pair`): link latency,
/// seeded loss of whole requests and answers, reordering by jitter, and a disconnect at a chosen event.
struct UploadPair {
    struct Link {
        var mtu = 247
        var latency: Duration = .milliseconds(8)
        /// Chance that a request (a write, when the device does not reassemble) or a whole answer is lost.
        var loss = 0.0
        /// Extra random delay up to this much per message, so that messages overtake each other (UDP).
        var jitter: Duration = .zero
        var reconnectDelay: Duration = .seconds(1)
    }

    enum Delivery {
        case toDevice([UInt8])
        case toClient([[UInt8]])
    }

    struct Event {
        var at: Timestamp
        var order: Int
        var delivery: Delivery
    }

    var now = Timestamp(nanoseconds: 1_000_000_000)
    var uploader: ImageUploader
    var device: SMPDeviceModel
    var link: Link
    var rng: SplitMix64
    var queue: [Event] = []
    var order = 0
    var events = 0
    var disconnectAtEvents: Set<Int> = []
    var disconnects = 0
    var reconnectAt: Timestamp?
    /// What the uploader said.
    var progress: [Int] = []
    var parameters: [SMPParameters] = []
    var finished = false
    var failure: UploadFailure?
    var writes: [[UInt8]] = []
    /// The most requests the uploader had waiting at once.
    var maxWaiting = 0

    init(image: [UInt8], device: SMPDeviceModel.Configuration, link: Link, uploader configuration: ImageUploader.Configuration? = nil, seed: UInt64 = 1) {
        var deviceConfiguration = device
        deviceConfiguration.writeLimit = link.mtu - 3
        self.device = SMPDeviceModel(configuration: deviceConfiguration)
        var uploaderConfiguration = configuration ?? ImageUploader.Configuration()
        uploaderConfiguration.client.writeLimit = link.mtu - 3
        uploaderConfiguration.client.deviceReassembles = device.reassembles
        self.uploader = ImageUploader(image: image, sha256: Array(SHA256.hash(data: image)), configuration: uploaderConfiguration)
        self.link = link
        self.rng = SplitMix64(seed: seed)
    }

    mutating func apply(_ orders: [UploadOrder]) {
        maxWaiting = max(maxWaiting, uploader.requestsWaiting)
        for order in orders {
            switch order {
            case .write(let bytes):
                writes.append(bytes)
                if !device.configuration.reassembles, link.loss > 0, rng.chance(link.loss) { continue }
                schedule(.toDevice(bytes))
            case .parameters(let value): parameters.append(value)
            case .progress(let value): progress.append(value.confirmedBytes)
            case .finished: finished = true
            case .failed(let reason): failure = reason
            }
        }
    }

    mutating func schedule(_ delivery: Delivery, from time: Timestamp? = nil) {
        var delay = link.latency
        if link.jitter > .zero {
            delay += .nanoseconds(Int64(rng.next() % UInt64(link.jitter.components.seconds * 1_000_000_000 + link.jitter.components.attoseconds / 1_000_000_000)))
        }
        queue.append(Event(at: (time ?? now).advanced(by: delay), order: order, delivery: delivery))
        order += 1
    }

    /// Runs until the upload finishes or fails, or `limit` of simulated time passes.
    mutating func run(limit: Duration = .seconds(3600)) {
        let end = now.advanced(by: limit)
        apply(uploader.start(at: now))
        while !finished, failure == nil {
            let nextEvent = queue.min { ($0.at, $0.order) < ($1.at, $1.order) }
            let candidates = [nextEvent?.at, uploader.nextDeadline, reconnectAt].compactMap { $0 }
            guard let next = candidates.min(), next <= end else { return }
            now = max(now, next)
            if let reconnect = reconnectAt, reconnect <= now {
                reconnectAt = nil
                apply(uploader.connected(writeLimit: link.mtu - 3, at: now))
                continue
            }
            if let event = nextEvent, event.at <= now {
                queue.removeAll { $0.order == event.order }
                events += 1
                if disconnectAtEvents.contains(events) {
                    disconnect()
                    continue
                }
                switch event.delivery {
                case .toDevice(let bytes):
                    for (leaves, notifications) in device.write(bytes, at: now) {
                        if link.loss > 0, rng.chance(link.loss) { continue }
                        schedule(.toClient(notifications), from: leaves)
                    }
                case .toClient(let notifications):
                    for notification in notifications { apply(uploader.received(notification, at: now)) }
                }
                continue
            }
            apply(uploader.handleTimeout(at: now))
        }
    }

    mutating func disconnect() {
        disconnects += 1
        queue.removeAll()
        device.disconnect(at: now)
        apply(uploader.connectionLost(at: now))
        reconnectAt = now.advanced(by: link.reconnectDelay)
    }
}
