/// Per-sender FIFO queues of method calls waiting for their turn (`DBusMethod.Dispatch.orderedPerSender`).
///
/// Plain data guarded by the object server's lock. A sender has an entry only while it has a call running or
/// waiting, so a client that leaves the bus leaves nothing behind once its last call is answered.
struct SenderQueues {
    struct Entry {
        let call: DBusMethodCall
        let address: ReplyAddress
    }

    private var waiting: [String: [Entry]] = [:]

    /// Queues `entry`; true when nothing of this sender was running, so the caller must start a drainer.
    mutating func enqueue(_ entry: Entry) -> Bool {
        if var queue = waiting[entry.call.sender] {
            queue.append(entry)
            waiting[entry.call.sender] = queue
            return false
        }
        waiting[entry.call.sender] = []
        return true
    }

    /// The sender's next waiting call, or nil (and the sender's entry removed) when there is none.
    mutating func next(of sender: String) -> Entry? {
        guard var queue = waiting[sender], !queue.isEmpty else {
            waiting[sender] = nil
            return nil
        }
        let entry = queue.removeFirst()
        waiting[sender] = queue
        return entry
    }

    /// Senders with a call running or waiting (for leak tests).
    var activeSenders: Int { waiting.count }
}
