import CaptureKit
import Dispatch
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs `snap`: a `CapturePhotoSeries` on the named camera. Checks the
/// outputs, opens the camera once, asks for the first photo before capture
/// starts (so the first good frame after the warmup is the photo), and
/// reports the photo output's events as the series hands them on.
final class SnapFrontend: PhotoCaptureDelegate, Sendable {
    private let command: Capctl.Snap
    private let reporter: SnapReporter
    /// Signalled when the series ends, the camera ends, or a signal asks to stop.
    private let wake = DispatchSemaphore(value: 0)
    private let interrupted = Atomic<Bool>(false)

    init(command: Capctl.Snap) throws {
        self.command = command
        reporter = SnapReporter(json: command.json || isatty(STDOUT_FILENO) != 1)
    }

    func run() throws -> ExitStatus {
        let output = PhotoOutput()
        let series: CapturePhotoSeries
        do throws(CapturePhotoSeries.SettingsError) {
            series = try CapturePhotoSeries(command.seriesSettings, output: output, delegate: self)
        } catch {
            throw CommandFailure(error.message(naming: Capctl.Snap.optionName), status: .usage)
        }
        do { try series.checkDestination() } catch { throw CommandFailure(error) }
        let (input, videoFormat) = try openCamera()
        output.warmup = command.warmup.warmup
        output.isLivePhotoCaptureEnabled = command.live
        if let problem = prepare(output, series: series, input: input, format: videoFormat) {
            input.close()
            throw CommandFailure(problem)
        }
        let session = CaptureSession()
        session.addInput(input)
        session.addOutput(output)
        session.inputDidEnd = { [weak self] _, end in
            if case .stopped = end { return }
            self?.wake.signal()
        }
        let signals = try SignalEvents([SIGINT, SIGTERM]) { [weak self] signal in
            guard let self else { return }
            if self.interrupted.exchange(true, ordering: .relaxed) && signal == SIGINT { _exit(130) }
            series.stop()
            self.wake.signal()
        }
        _ = signals

        // The first request waits in the output before capture starts.
        do { try series.start() } catch {
            input.close()
            throw CommandFailure(error)
        }
        let wake = self.wake
        DispatchQueue.global().async {
            _ = series.waitUntilFinished()
            wake.signal()
        }
        do { try session.startRunning() } catch { throw CommandFailure(error) }
        wake.wait()
        // Photos still waiting for a frame end with the session.
        session.stopRunning()
        return report(series.waitUntilFinished())
    }

    /// The closing summary, and the status of the first failure.
    private func report(_ result: CapturePhotoSeries.Result) -> ExitStatus {
        var errors = result.failures
        if interrupted.load(ordering: .relaxed) {
            // Requests cut short by the user are not failures.
            errors.removeAll { if case .captureEnded = $0 { return true } else { return false } }
        }
        reporter.finished(photos: result.photos.count, failed: errors.count)
        guard let error = errors.first else { return .success }
        let failure = CommandFailure(error)
        Diagnostics.error(failure.message)
        return failure.status
    }

    /// Opens the camera (settling its format) before the session runs, so
    /// that the photos' settings are checked against what it sends.
    private func openCamera() throws -> (CaptureInput, CaptureVideoFormat) {
        let name = command.video?.specifier ?? "video:0"
        let input: CaptureInput
        do throws(CaptureError) {
            input = try CaptureInput(camera: name, request: command.capture.request, realtime: !command.capture.noRealtime)
            try input.open()
        } catch {
            throw CommandFailure(error)
        }
        guard let format = input.videoFormat else {
            input.close()
            throw CommandFailure("\(name): the camera states no format", status: .dataError)
        }
        return (input, format)
    }

    /// Sets the flash up and checks everything the camera's format decides,
    /// before anything is written; answers what stands in the way.
    private func prepare(_ output: PhotoOutput, series: CapturePhotoSeries, input: CaptureInput, format: CaptureVideoFormat) -> PhotoError? {
        do throws(PhotoError) {
            output.flashDevice = try input.photoFlash(for: command.flash)
            try series.checkSettings(for: format)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Delegate

    func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings) {
        reporter.event("willBeginCapture", settings)
    }

    func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings) {
        reporter.event("willCapturePhoto", settings)
    }

    func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings, timestamp: MediaTime) {
        reporter.event("didCapturePhoto", settings, timestamp: timestamp.isNumeric ? timestamp.seconds : nil)
    }

    func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto) {
        reporter.photo(photo)
    }

    func photoOutput(_ output: PhotoOutput, didFinishProcessingLivePhotoMovie movie: LivePhotoMovie) {
        reporter.movie(movie)
    }

    func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings, error: PhotoError?) {
        reporter.finishedCapture(settings, error: error)
    }
}

extension CommandFailure {
    /// The status and message for a photo error.
    init(_ error: PhotoError) {
        switch error {
        case .settingsReused, .unsupported: self.init(error.description, status: .usage)
        case .flash: self.init(error.description + "; use --flash off or auto", status: .usage)
        case .outputExists, .cannotWrite: self.init(error.description, status: .cannotCreate)
        case .processing: self.init(error.description, status: .dataError)
        case .captureEnded: self.init(error.description, status: .unavailable)
        }
    }
}

/// `snap`'s events on stdout: one line per photo for people, or one JSON
/// object a line for every delegate event. Field names are stable.
package final class SnapReporter: Sendable {
    let json: Bool
    /// Whole lines are written under it.
    private let lock = Mutex(())

    init(json: Bool) { self.json = json }

    package struct Event: Encodable {
        var event: String
        var uniqueID: Int64
        var format: String
        package var width: Int
        package var height: Int
        var flashMode: String
        var flashFired: Bool
        var passthrough: Bool
        var fourcc: String
        var quality: Int?
        package var path: String?
        package var timestamp: Double?
        package var bytes: Int?
        package var sequence: UInt64?
        package var sidecar: String?
        var livePhotoMovie: String?
        var duration: Double?
        var photoDisplayTime: Double?
        var frames: Int?
        package var error: String?

        package init(_ name: String, _ settings: ResolvedPhotoSettings) {
            event = name
            uniqueID = settings.uniqueID
            format = settings.format.rawValue
            width = settings.dimensions.width
            height = settings.dimensions.height
            flashMode = settings.flashMode.rawValue
            flashFired = settings.flashFired
            passthrough = settings.isPassthrough
            fourcc = settings.sourceFourCC
            quality = settings.quality
            path = settings.outputPath
            livePhotoMovie = settings.livePhotoMovieFilePath
        }
    }

    struct Finished: Encodable {
        var event = "finished"
        var photos: Int
        var failed: Int
    }

    private func write<T: Encodable>(_ value: T) {
        lock.withLock { _ in try? JSONOutput.printLine(value) }
    }

    private func say(_ line: String) {
        lock.withLock { _ in
            StandardStream.output.write(line + "\n")
        }
    }

    func event(_ name: String, _ settings: ResolvedPhotoSettings, timestamp: Double? = nil) {
        guard json else { return }
        var event = Event(name, settings)
        event.timestamp = timestamp
        write(event)
    }

    func photo(_ photo: CapturedPhoto) {
        if json {
            var event = Event("didFinishProcessingPhoto", photo.resolvedSettings)
            event.path = photo.path
            event.width = photo.dimensions.width
            event.height = photo.dimensions.height
            event.bytes = photo.byteCount
            event.timestamp = photo.timestamp.seconds
            event.sequence = photo.sequence
            event.sidecar = photo.sidecarPath
            write(event)
            return
        }
        let settings = photo.resolvedSettings
        var how = settings.format.rawValue.uppercased()
        if settings.isPassthrough { how += settings.format == .raw ? " \(settings.sourceFourCC)" : " as the camera sent it" }
        if settings.flashFired { how += ", flash" }
        say("\(photo.path ?? "photo") \(photo.dimensions) \(how), \(formatBytes(Int64(photo.byteCount)))")
    }

    func movie(_ movie: LivePhotoMovie) {
        if json {
            var event = Event("didFinishProcessingLivePhotoMovie", movie.resolvedSettings)
            event.path = movie.path
            event.duration = movie.duration.seconds
            event.photoDisplayTime = movie.photoDisplayTime.seconds
            event.frames = movie.frames
            event.bytes = Int(movie.bytes)
            write(event)
            return
        }
        say("\(movie.path) " + String(cFormat: "live movie %.2f s, photo at %.2f s, ", movie.duration.seconds, movie.photoDisplayTime.seconds)
            + formatBytes(movie.bytes))
    }

    func finishedCapture(_ settings: ResolvedPhotoSettings, error: PhotoError?) {
        guard json else { return }
        var event = Event("didFinishCapture", settings)
        event.error = error?.description
        write(event)
    }

    func finished(photos: Int, failed: Int) {
        guard json else { return }
        write(Finished(photos: photos, failed: failed))
    }
}
