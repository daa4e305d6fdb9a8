import Synchronization

extension ConnectionLoop {
    typealias CallCompletion = (Result<[DBusValue], any Error>) -> Void

    /// Runs one method call on the loop thread and suspends until its outcome, for both kinds of connection.
    ///
    /// `start` sends the call and must call its completion exactly once (reply, error, timeout, closed);
    /// `cancel` abandons the call with `token` (it completes with `CancellationError`). A task cancelled before
    /// `start` ran never sends the call: the cancel job would already have run and found nothing to cancel.
    func call(
        token: UInt64,
        start: @escaping @Sendable (Core, @escaping CallCompletion) -> Void,
        cancel: @escaping @Sendable (Core, UInt64) -> Void
    ) async throws -> [DBusValue] {
        let cancellation = CallCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[DBusValue], any Error>) in
                submit { core in
                    guard let core else {
                        continuation.resume(throwing: DBusError.connectionClosed)
                        return
                    }
                    guard !cancellation.isCancelled else {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    start(core) { continuation.resume(with: $0) }
                }
            }
        } onCancel: {
            cancellation.cancel()
            submit { core in
                if let core { cancel(core, token) }
            }
        }
    }
}

/// Tells a call's job that its task was cancelled before the job ran (a job runs on the loop thread, where
/// `Task.isCancelled` says nothing about the caller).
private final class CallCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    var isCancelled: Bool { flag.load(ordering: .acquiring) }

    func cancel() {
        flag.store(true, ordering: .releasing)
    }
}
