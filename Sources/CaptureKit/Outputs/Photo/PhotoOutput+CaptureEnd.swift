/// How a photo output tells a series that capture ended, and whether a
/// request made while it is not capturing waits for a start.
extension PhotoOutput {
    /// Whether a request made while the output is not capturing waits for a start.
    enum StartWait {
        /// Waits for the next start (`capturePhoto(with:delegate:)`).
        case forAnyStart
        /// Waits only for the output's first start: once capture has ended
        /// (the session stopped, the camera ended), it is refused with
        /// `captureEnded` rather than kept for a restart that may never come.
        case forFirstStart
        /// Refused with `captureEnded` unless the output is capturing now.
        case never
    }

    /// Calls `observer` once, when capture ends: at once when its camera has
    /// ended while the session runs, else when this run (or, before the
    /// session starts, the next one) ends. Answers a token for
    /// `removeEndObserver(_:)` (nil when it was called at once).
    @discardableResult
    func whenCaptureEnds(_ observer: @escaping @Sendable (String) -> Void) -> Int? {
        let (ended, token) = lock.withLock { () -> (String?, Int?) in
            if queue != nil, let endReason { return (endReason, nil) }
            nextObserverToken += 1
            endObservers[nextObserverToken] = observer
            return (nil, nextObserverToken)
        }
        if let ended { observer(ended) }
        return token
    }

    /// Forgets an observer that no longer needs telling.
    func removeEndObserver(_ token: Int) {
        lock.withLock { _ = endObservers.removeValue(forKey: token) }
    }

    func tellEndObservers() {
        let (observers, reason) = lock.withLock { () -> ([@Sendable (String) -> Void], String) in
            defer { endObservers = [:] }
            return (Array(endObservers.values), endReason ?? "capture ended")
        }
        for observer in observers { observer(reason) }
    }
}
