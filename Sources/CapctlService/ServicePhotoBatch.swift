import CapctlCommands
import CaptureKit
import Synchronization

/// The photos of one `POST /photos` request: issues them to the camera's
/// photo output (a burst at once, a time-lapse one per interval, as `snap`
/// does), hears the output's delegate calls on its processing thread,
/// publishes a `photo` event for each photo, and lets the request wait for
/// the end without holding a thread: the output hands frames over and makes
/// photos on a thread of its own, and resumes the request when they are done.
final class ServicePhotoBatch: PhotoCaptureDelegate, Sendable {
    private let request: PhotoSettingsRequest
    private let output: PhotoOutput
    private let events: ServiceEvents
    private let folder: ServiceFolder
    /// Whether the session still runs: a photo output of a stopped session
    /// would keep a request waiting for a start that never comes.
    private let isRunning: @Sendable () -> Bool

    /// Written on the output's processing thread, read by the request.
    private struct State {
        var photos: [CapturedPhoto] = []
        var failure: PhotoError?
        var done = 0
        /// The first photo's capture time (CLOCK_MONOTONIC nanoseconds): a time-lapse is spaced from it.
        var firstCapture: Int64?
        /// The request, waiting until this many photo requests are done.
        var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
    }
    private let state = Mutex(State())

    init(request: PhotoSettingsRequest, output: PhotoOutput, events: ServiceEvents, folder: ServiceFolder,
         isRunning: @escaping @Sendable () -> Bool) {
        self.request = request
        self.isRunning = isRunning
        self.output = output
        self.events = events
        self.folder = folder
    }

    /// Takes the photos and waits for them: answers them in capture order,
    /// or the first failure (no further photo is asked for after one).
    func run() async -> Result<[CapturedPhoto], PhotoError> {
        var issued = 0
        let intervalNanoseconds = request.interval.converted(toTimescale: MonotonicClock.timescale).value
        // Consecutive frames: every request waits in the output at once, each taking a later frame.
        for _ in 0..<(intervalNanoseconds <= 0 ? request.count : 1) {
            if let failure = issue(&issued) { return await end(issued, failure) }
        }
        while true {
            await waitUntilDone(issued)
            let (failure, first) = state.withLock { ($0.failure, $0.firstCapture) }
            if let failure { return .failure(failure) }
            if issued == request.count { return .success(state.withLock { $0.photos }) }
            let due = (first ?? MonotonicClock.nowNanoseconds()) + Int64(issued) * intervalNanoseconds
            // In short steps, so that a service told to stop does not wait out a long interval.
            while case let remaining = due - MonotonicClock.nowNanoseconds(), remaining > 0, isRunning() {
                do { try await Task.sleep(for: .nanoseconds(min(remaining, 200_000_000))) } catch {
                    return .failure(.captureEnded("the request was cancelled after \(issued) of \(request.count) photos"))
                }
            }
            if let failure = issue(&issued) { return await end(issued, failure) }
        }
    }

    /// A refused request: the ones issued before it are waited for, so that none is left running.
    private func end(_ issued: Int, _ failure: PhotoError) async -> Result<[CapturedPhoto], PhotoError> {
        await waitUntilDone(issued)
        return .failure(failure)
    }

    /// Returns once `count` photo requests are done.
    private func waitUntilDone(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                guard state.done < count else { return true }
                state.waiter = (count, continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Asks for photo `issued + 1`; answers a refusal (the output fails later problems through the delegate).
    private func issue(_ issued: inout Int) -> PhotoError? {
        let path: String?
        do { path = try request.path(number: issued + 1) } catch {
            return .cannotWrite(path: request.name(number: issued + 1) ?? "", reason: error.message)
        }
        guard isRunning() else { return .captureEnded("the service is stopping: the camera no longer runs") }
        let settings = PhotoSettings(format: request.format, quality: request.quality, flashMode: request.flash, outputPath: path)
        do {
            try output.capturePhoto(with: settings, delegate: self)
        } catch {
            return error
        }
        issued += 1
        return nil
    }

    // MARK: Delegate (the output's processing thread)

    func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings, timestamp: MediaTime) {
        guard timestamp.isNumeric else { return }
        let stamp = timestamp.converted(toTimescale: MonotonicClock.timescale).value
        state.withLock { if $0.firstCapture == nil { $0.firstCapture = stamp } }
    }

    func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto) {
        state.withLock { $0.photos.append(photo) }
        var event = SnapReporter.Event("photo", photo.resolvedSettings)
        event.path = photo.path.map(folder.name)
        event.sidecar = photo.sidecarPath.map(folder.name)
        event.width = photo.dimensions.width
        event.height = photo.dimensions.height
        event.bytes = photo.byteCount
        event.timestamp = photo.timestamp.seconds
        event.sequence = photo.sequence
        events.publish(CameraEvent(camera: request.camera.id, event: event))
    }

    func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings, error: PhotoError?) {
        if let error {
            var event = SnapReporter.Event("photo-failed", settings)
            event.path = settings.outputPath.map(folder.name)
            event.error = error.description
            events.publish(CameraEvent(camera: request.camera.id, event: event))
        }
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.done += 1
            if let error, state.failure == nil { state.failure = error }
            guard let waiter = state.waiter, state.done >= waiter.count else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }
}

/// An event with the id of the camera it concerns, in the same JSON object.
struct CameraEvent<Event: Encodable>: Encodable {
    let camera: String
    let event: Event

    private enum Keys: String, CodingKey { case camera }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(camera, forKey: .camera)
    }
}
