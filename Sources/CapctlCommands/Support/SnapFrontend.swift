import CaptureKit
import Dispatch
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs `snap`: checks the outputs, opens the camera once, queues the first
/// photo request before capture starts (so the first good frame after the
/// warmup is the photo), spaces further requests by the interval, and reports
/// the photo output's events.
final class SnapFrontend: PhotoCaptureDelegate, Sendable {
    private let command: Capctl.Snap
    private let format: PhotoFileFormat
    private let template: FileNameTemplate
    private let reporter: SnapReporter
    private let finished = DispatchSemaphore(value: 0)
    /// What the photo output's thread and the signal thread tell the command's.
    private struct State {
        var failures: [PhotoError] = []
        var photos = 0
        var firstCapture: Int64?
        var interrupted = false
    }
    private let state = Mutex(State())

    init(command: Capctl.Snap) throws {
        self.command = command
        format = command.photoFormat!
        do { template = try FileNameTemplate(command.out) } catch { throw CommandFailure(error.description, status: .usage) }
        reporter = SnapReporter(json: command.json || isatty(STDOUT_FILENO) != 1)
    }

    /// The path of photo `number` (from 1) taken now.
    private func path(number: Int) -> String {
        let name = template.path(number: number)
        return template.hasCounter || command.count == 1 ? name : FileNameTemplate.numbered(name, number: number)
    }

    private func moviePath(for photo: String) -> String? {
        guard command.live else { return nil }
        let slash = photo.lastIndex(of: "/")
        let stem: String
        if let dot = photo.lastIndex(of: "."), slash.map({ dot > $0 }) ?? true, dot != photo.startIndex {
            stem = String(photo[..<dot])
        } else {
            stem = photo
        }
        return stem + "." + command.liveFormat.rawValue
    }

    /// Every file the photos would be written to, as far as they are known now.
    private func plannedFiles() -> [String] {
        // Names with time fields are only known when each photo is taken; the first one is checked.
        let known = template.namesEachFile && !template.hasCounter ? 1 : command.count
        var files: [String] = []
        for number in 1...min(known, 10_000) {
            let photo = path(number: number)
            files.append(photo)
            if format == .raw { files.append(PhotoOutput.rawSidecarPath(for: photo)) }
            if let movie = moviePath(for: photo) { files.append(movie) }
        }
        return files
    }

    /// Fails before opening the camera when an output exists or cannot be created.
    private func checkOutputs() throws {
        var seen = Set<String>()
        for file in plannedFiles() {
            guard seen.insert(file).inserted else {
                throw CommandFailure("\(command.out): photos \(file) would be written twice; add %n to OUT", status: .usage)
            }
            do throws(RecordingError) {
                try RecordingDestinationCheck.check(file, overwrites: false)
            } catch .outputExists(let path) {
                throw CommandFailure("\(path): already exists; capctl never overwrites a file", status: .cannotCreate)
            } catch {
                throw CommandFailure(error.description, status: .cannotCreate)
            }
        }
    }

    private func settings(number: Int) -> PhotoSettings {
        let photo = path(number: number)
        return PhotoSettings(format: format, quality: command.quality, size: nil, flashMode: command.flash,
                             outputPath: photo, livePhotoMovieFilePath: moviePath(for: photo))
    }

    func run() throws -> ExitStatus {
        try checkOutputs()
        let (input, videoFormat) = try openCamera()
        let output = PhotoOutput()
        output.warmup = command.warmup.warmup
        output.isLivePhotoCaptureEnabled = command.live
        if let problem = prepare(output, input: input, format: videoFormat) {
            input.close()
            throw CommandFailure(problem)
        }
        let session = CaptureSession()
        session.addInput(input)
        session.addOutput(output)
        session.inputDidEnd = { [weak self] _, end in
            if case .stopped = end { return }
            self?.finished.signal()
        }
        let signals = try SignalEvents([SIGINT, SIGTERM]) { [weak self] signal in
            guard let self else { return }
            let again = self.state.withLock { state -> Bool in
                defer { state.interrupted = true }
                return state.interrupted
            }
            if again && signal == SIGINT { _exit(130) }
            self.finished.signal()
        }
        _ = signals

        // The first request waits in the output before capture starts.
        var issued = 0
        do {
            for _ in 0..<(command.interval.time <= .zero ? command.count : 1) { try issue(&issued, to: output) }
        } catch {
            input.close()
            throw error
        }
        do { try session.startRunning() } catch { throw CommandFailure(error) }
        try waitForPhotos(issued: &issued, output: output, session: session)
        session.stopRunning()
        return report()
    }

    private func issue(_ issued: inout Int, to output: PhotoOutput) throws {
        issued += 1
        do { try output.capturePhoto(with: settings(number: issued), delegate: self) } catch { throw CommandFailure(error) }
    }

    /// Waits for each request to finish; in a time-lapse, issues the next at its time.
    private func waitForPhotos(issued: inout Int, output: PhotoOutput, session: CaptureSession) throws {
        var done = 0
        let interval = command.interval.time.converted(toTimescale: MonotonicClock.timescale).value
        while done < issued {
            finished.wait()
            let (count, stop, first) = state.withLock { ($0.photos + $0.failures.count, $0.interrupted, $0.firstCapture) }
            done = count
            if stop || !session.isRunning { return }
            guard done == issued, issued < command.count else { continue }
            let due = (first ?? MonotonicClock.nowNanoseconds()) + Int64(issued) * interval
            while MonotonicClock.nowNanoseconds() < due {
                let remaining = Double(due - MonotonicClock.nowNanoseconds()) / 1e9
                if finished.wait(timeout: .now() + max(0.001, remaining)) == .success, state.withLock({ $0.interrupted }) { break }
            }
            if state.withLock({ $0.interrupted }) { return }
            try issue(&issued, to: output)
        }
    }

    /// The closing summary, and the status of the first failure.
    private func report() -> ExitStatus {
        var (taken, errors) = state.withLock { ($0.photos, $0.failures) }
        if state.withLock({ $0.interrupted }) {
            // Requests cut short by the user are not failures.
            errors.removeAll { if case .captureEnded = $0 { return true } else { return false } }
        }
        reporter.finished(photos: taken, failed: errors.count)
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
    private func prepare(_ output: PhotoOutput, input: CaptureInput, format: CaptureVideoFormat) -> PhotoError? {
        do throws(PhotoError) {
            output.flashDevice = try input.photoFlash(for: command.flash)
            _ = try PhotoOutput.resolve(settings(number: 1), for: format)
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
        if timestamp.isNumeric {
            state.withLock { if $0.firstCapture == nil { $0.firstCapture = timestamp.converted(toTimescale: MonotonicClock.timescale).value } }
        }
        reporter.event("didCapturePhoto", settings, timestamp: timestamp.isNumeric ? timestamp.seconds : nil)
    }

    func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto) {
        reporter.photo(photo)
    }

    func photoOutput(_ output: PhotoOutput, didFinishProcessingLivePhotoMovie movie: LivePhotoMovie) {
        reporter.movie(movie)
    }

    func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings, error: PhotoError?) {
        state.withLock {
            if let error { $0.failures.append(error) } else { $0.photos += 1 }
        }
        reporter.finishedCapture(settings, error: error)
        finished.signal()
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
