import CapctlService

extension ServiceRequestContext {
    /// Returns once the request's credential or link no longer holds (expired, removed from the
    /// access file, or its link key replaced, each read on SIGHUP), or when the task is cancelled:
    /// an answer that goes on (a live view, the events) ends then. Looked at every second.
    func accessEnded() async {
        guard let control = accessControl else { return await Self.never() }
        let grant = access
        while !Task.isCancelled {
            if !control.isValid(grant) { return }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private static func never() async {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }
}
