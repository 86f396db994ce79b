import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A series of photos from a `PhotoOutput`, beside `CaptureRecorder` for
/// movies: one photo, a burst of consecutive frames, or a time-lapse.
///
/// Each photo is one `PhotoSettings` request to the output, as with
/// AVCapturePhotoOutput; the series names its file from the settings'
/// destination template, checks the files before any photo is taken, and
/// spaces a time-lapse from the first photo's capture time (so that photo N
/// is due at first + (N − 1) × interval, whatever the processing took). A
/// burst asks for every photo at once: each takes a later frame.
///
/// The delegate hears every request's calls as the output makes them: on
/// its processing thread, or for a request it refuses on the spot (its
/// queue closed or full), on the thread that asked; the end is `waitUntilFinished()` or
/// `finished()`. The series ends when every photo is done, when it is
/// stopped, or when capture ends (the session stops, the camera goes away).
///
///     let series = try CapturePhotoSeries(settings, output: photoOutput, delegate: self)
///     try series.checkDestination()
///     try series.start()               // before or after the session starts
///     let result = series.waitUntilFinished()
public final class CapturePhotoSeries: Sendable {
    /// The settings, checked.
    public let settings: Settings
    /// The format every photo is written in.
    public let format: PhotoFileFormat
    private let template: FileNameTemplate?
    private let output: PhotoOutput
    private let delegate: (any PhotoCaptureDelegate & Sendable)?
    private let state = Mutex(State())
    private let ended = DispatchSemaphore(value: 0)

    private struct State {
        var issued = 0
        var done = 0
        var photos: [CapturedPhoto] = []
        var failures: [PhotoError] = []
        /// The first photo's capture time (CLOCK_MONOTONIC nanoseconds): a time-lapse is spaced from it.
        var firstCapture: Int64?
        var isStopped = false
        var captureEnded: String?
        /// The timer of a time-lapse's next photo, while it runs: it asks for
        /// the photo only if this is still its number when it fires.
        var nextPhoto: Int?
        var result: Result?
        /// While `start()` asks for the first photos.
        var isStarting = false
        /// The output's token for this series' end observer.
        var endObserver: Int?
        var waiters: [CheckedContinuation<Result, Never>] = []
    }

    /// A series on `output`; throws for settings that do not go together.
    public init(_ settings: Settings, output: PhotoOutput,
                delegate: (any PhotoCaptureDelegate & Sendable)? = nil) throws(SettingsError) {
        try settings.validate()
        self.settings = settings
        // validate() made sure both exist.
        format = settings.resolvedFormat ?? .jpeg
        template = try? settings.destination.map { try FileNameTemplate($0) }
        self.output = output
        self.delegate = delegate
        if let problem = Self.fileWrittenTwice(plannedFiles) {
            throw SettingsError(.destination, .writtenTwice(problem))
        }
    }

    // MARK: Files

    /// The file of photo `number` (from 1) taken at `time` (seconds since
    /// the epoch), or nil when the photos are made in memory.
    public func path(ofPhoto number: Int, time: Int = Int(Glibc.time(nil))) -> String? {
        guard let template else { return nil }
        let name = template.path(number: number, time: time)
        return template.hasCounter || settings.count == 1 ? name : FileNameTemplate.numbered(name, number: number)
    }

    /// The live photo movie beside `photo`: its name with the movie's extension.
    public func livePhotoMoviePath(for photo: String) -> String? {
        guard let type = settings.livePhotoMovieFileType else { return nil }
        let slash = photo.lastIndex(of: "/")
        var stem = photo
        if let dot = photo.lastIndex(of: "."), slash.map({ dot > $0 }) ?? true, dot != photo.startIndex {
            stem = String(photo[..<dot])
        }
        return stem + "." + type.rawValue
    }

    /// Every file the series would write, as far as it is known now: names
    /// with time fields are known only as each photo is taken, so of those
    /// the first is given.
    public var plannedFiles: [String] {
        guard let template else { return [] }
        let known = template.namesEachFile && !template.hasCounter ? 1 : settings.count
        let now = Int(Glibc.time(nil))
        var files: [String] = []
        for number in 1...min(known, 10_000) {
            guard let photo = path(ofPhoto: number, time: now) else { continue }
            files.append(photo)
            if format == .raw { files.append(PhotoOutput.rawSidecarPath(for: photo)) }
            if let movie = livePhotoMoviePath(for: photo) { files.append(movie) }
        }
        return files
    }

    private static func fileWrittenTwice(_ files: [String]) -> String? {
        var seen = Set<String>()
        return files.first { !seen.insert($0).inserted }
    }

    /// Refuses, before any photo is taken, a planned file that exists
    /// (`outputExists`: a series never overwrites) or cannot be created.
    public func checkDestination() throws(PhotoError) {
        for file in plannedFiles {
            do throws(RecordingError) {
                try RecordingDestinationCheck.check(file, overwrites: false)
            } catch .outputExists(let path) {
                throw .outputExists(path: path)
            } catch .cannotCreate(let path, let reason) {
                throw .cannotWrite(path: path, reason: reason)
            } catch {
                throw .cannotWrite(path: file, reason: error.description)
            }
        }
    }

    /// Refuses settings the camera's format cannot meet (see `PhotoOutput.resolve`).
    public func checkSettings(for videoFormat: CaptureVideoFormat) throws(PhotoError) {
        _ = try PhotoOutput.resolve(photoSettings(number: 1), for: videoFormat)
    }

    /// The request for photo `number`, named now.
    private func photoSettings(number: Int) -> PhotoSettings {
        let photo = path(ofPhoto: number)
        return PhotoSettings(format: format, quality: settings.quality, size: nil, flashMode: settings.flashMode,
                             outputPath: photo, livePhotoMovieFilePath: photo.flatMap(livePhotoMoviePath(for:)))
    }

    // MARK: Running

    /// Asks for the first photo (a burst: every photo); the output keeps
    /// requests made before its session first starts for its first frames.
    /// Throws what the output refuses at once (flash on without a flash,
    /// capture that has ended); the photos asked for before are then waited
    /// for, and the series ends with them. A series stopped, or whose capture
    /// ended, before it starts asks for nothing.
    public func start() throws(PhotoError) {
        let token = output.whenCaptureEnds { [weak self] reason in self?.captureDidEnd(reason) }
        let first = settings.interval <= .zero ? settings.count : 1
        // Every photo of the first batch counts as asked for before any is, so that one
        // done meanwhile neither ends the series nor sets a timer.
        let begins = state.withLock { state -> Bool in
            state.endObserver = token
            guard state.result == nil, !state.isStopped, state.captureEnded == nil else { return false }
            state.issued = first
            state.isStarting = true
            return true
        }
        guard begins else { return }
        var refusal: PhotoError?
        for number in 1...first {
            do {
                try output.capturePhoto(with: photoSettings(number: number), delegate: Relay(series: self), waiting: .forFirstStart)
            } catch {
                state.withLock { state in
                    state.issued = number - 1
                    state.isStopped = true
                }
                refusal = error
                break
            }
        }
        state.withLock { $0.isStarting = false }
        scheduleNextPhoto()
        finishIfDone()
        if let refusal { throw refusal }
    }

    /// Asks for no further photo; the series ends once the photos already
    /// asked for are done (stopping the session ends them at once).
    public func stop() {
        state.withLock { state in
            state.isStopped = true
            state.nextPhoto = nil
        }
        finishIfDone()
    }

    /// Waits for the end of the series, holding the calling thread.
    public func waitUntilFinished() -> Result {
        ended.wait()
        ended.signal()
        return state.withLock { $0.result! }
    }

    /// Waits for the end of the series, holding no thread.
    public func finished() async -> Result {
        await withCheckedContinuation { continuation in
            let result = state.withLock { state -> Result? in
                if let result = state.result { return result }
                state.waiters.append(continuation)
                return nil
            }
            if let result { continuation.resume(returning: result) }
        }
    }

    /// Ends the series when nothing is waited for and no photo is still to come.
    private func finishIfDone() {
        let (result, waiters) = state.withLock { state -> (Result?, [CheckedContinuation<Result, Never>]) in
            guard state.result == nil, !state.isStarting, state.done == state.issued, state.nextPhoto == nil, !hasMore(state) else {
                return (nil, [])
            }
            return finish(&state)
        }
        guard let result else { return }
        if let token = state.withLock({ $0.endObserver }) { output.removeEndObserver(token) }
        for waiter in waiters { waiter.resume(returning: result) }
        ended.signal()
    }

    /// Whether further photos are to be asked for (before `start()`, all are).
    private func hasMore(_ state: State) -> Bool {
        state.issued < settings.count && !state.isStopped && state.captureEnded == nil
            && !(settings.stopsAfterFailure && !state.failures.isEmpty)
    }

    private func finish(_ state: inout State) -> (Result?, [CheckedContinuation<Result, Never>]) {
        let result = Result(photos: state.photos, failures: state.failures, requested: settings.count,
                                       isStopped: state.isStopped, captureEnded: state.captureEnded)
        state.result = result
        defer { state.waiters = [] }
        return (result, state.waiters)
    }

    private func captureDidEnd(_ reason: String) {
        state.withLock { state in
            if state.captureEnded == nil { state.captureEnded = reason }
            state.nextPhoto = nil
        }
        finishIfDone()
    }

    /// After a photo is done: a time-lapse's next photo is due at the first
    /// photo's capture time plus `issued` intervals.
    private func scheduleNextPhoto() {
        let interval = settings.interval.converted(toTimescale: MonotonicClock.timescale).value
        guard interval > 0 else { return }
        let timer = state.withLock { state -> (number: Int, delay: Int64)? in
            guard state.result == nil, !state.isStarting, state.done == state.issued, state.nextPhoto == nil, hasMore(state) else { return nil }
            let due = (state.firstCapture ?? MonotonicClock.nowNanoseconds()) + Int64(state.issued) * interval
            state.nextPhoto = state.issued + 1
            return (state.issued + 1, max(0, due - MonotonicClock.nowNanoseconds()))
        }
        guard let timer else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(timer.delay))) { [weak self] in
            self?.issuePhoto(timer.number)
        }
    }

    /// A time-lapse's timer fired: asks for photo `number`, unless the series stopped meanwhile.
    private func issuePhoto(_ number: Int) {
        let due = state.withLock { state -> Bool in
            guard state.nextPhoto == number, !state.isStopped, state.captureEnded == nil else { return false }
            state.nextPhoto = nil
            state.issued = number
            return true
        }
        guard due else { return }
        do {
            try output.capturePhoto(with: photoSettings(number: number), delegate: Relay(series: self), waiting: .never)
        } catch .captureEnded(let reason) {
            state.withLock { $0.issued -= 1 }
            captureDidEnd(reason)
        } catch {
            // Refused at once (the output made no call for it): counted as a failed photo.
            state.withLock { $0.done += 1; $0.failures.append(error) }
            scheduleNextPhoto()
            finishIfDone()
        }
    }

    // MARK: The output's calls

    /// The output's delegate for the series' requests: keeps count, and hands every call on.
    private final class Relay: PhotoCaptureDelegate, Sendable {
        let series: CapturePhotoSeries
        init(series: CapturePhotoSeries) { self.series = series }

        func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings) {
            series.delegate?.photoOutput(output, willBeginCaptureFor: settings)
        }

        func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings) {
            series.delegate?.photoOutput(output, willCapturePhotoFor: settings)
        }

        func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings, timestamp: MediaTime) {
            if timestamp.isNumeric {
                let stamp = timestamp.converted(toTimescale: MonotonicClock.timescale).value
                series.state.withLock { if $0.firstCapture == nil { $0.firstCapture = stamp } }
            }
            series.delegate?.photoOutput(output, didCapturePhotoFor: settings, timestamp: timestamp)
        }

        func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto) {
            series.state.withLock { $0.photos.append(photo) }
            series.delegate?.photoOutput(output, didFinishProcessingPhoto: photo)
        }

        func photoOutput(_ output: PhotoOutput, didFinishProcessingLivePhotoMovie movie: LivePhotoMovie) {
            series.delegate?.photoOutput(output, didFinishProcessingLivePhotoMovie: movie)
        }

        func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings, error: PhotoError?) {
            series.state.withLock { state in
                state.done += 1
                if let error { state.failures.append(error) }
            }
            series.delegate?.photoOutput(output, didFinishCaptureFor: settings, error: error)
            series.scheduleNextPhoto()
            series.finishIfDone()
        }
    }
}

extension CapturePhotoSeries {
    /// How a photo series ended.
    public struct Result: Sendable {
        /// The photos made, in the order they were captured.
        public let photos: [CapturedPhoto]
        /// The photos that failed, in order.
        public let failures: [PhotoError]
        /// How many photos the settings asked for.
        public let requested: Int
        /// Whether `stop()` ended the series.
        public let isStopped: Bool
        /// Why capture ended before the series did, when it did.
        public let captureEnded: String?

        /// Whether every photo asked for was made.
        public var isComplete: Bool { photos.count == requested }
    }
}
