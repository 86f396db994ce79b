/// Finishing without waiting, as AVAssetWriter's `finishWriting(completionHandler:)`.
extension AssetWriter {
    /// Finishes the file on a thread of its own and calls `handler` there
    /// once it is done; `status` and `error` then say how it went (as in
    /// AVFoundation, the handler takes no argument). Appends after this
    /// call fail as after `finishWriting()`.
    public func finishWriting(completionHandler handler: @escaping @Sendable () -> Void) {
        // The thread lets go of itself when it ends (nobody joins it).
        _ = CaptureThread(name: "finish-writing") { [self] in
            do throws(WriterError) { try finishWriting() } catch {}
            handler()
        }
    }

    /// Finishes the file without blocking the caller's task; throws what
    /// `finishWriting()` would.
    public func finishWriting() async throws(WriterError) {
        let result: Result<Void, WriterError> = await withCheckedContinuation { continuation in
            _ = CaptureThread(name: "finish-writing") { [self] in
                do throws(WriterError) {
                    try finishWriting()
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        try result.get()
    }
}
