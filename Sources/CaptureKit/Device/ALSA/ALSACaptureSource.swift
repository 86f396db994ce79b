#if canImport(Glibc)
import Glibc
#endif

/// A microphone as a capture source: an ALSA capture PCM (`hw:Loopback,1,0`,
/// `plughw:…`, `default`) read in whole periods of about 20 ms. Each chunk is
/// stamped on CLOCK_MONOTONIC from the device's own timestamps; overruns are
/// recovered from and the frames they lost counted in `droppedByDevice`.
final class ALSACaptureSource: CaptureSource, Sendable {
    var mediaType: MediaType { .audio }
    let path: String
    let localizedName: String
    let modelID: String?
    /// What was asked for.
    let request: CaptureAudioRequest

    private let device: CaptureDevice
    /// The open PCM and counters. The capture loop takes the PCM out and
    /// uses it on the capture thread alone; close() takes it only after the
    /// loop ended.
    private let state = Locked(State())

    /// Sample formats in order of preference: what the device takes first.
    static let preferredFormats: [AudioSampleFormat] = [.s16, .s32, .f32]
    /// The ALSA names of the preferred formats, for messages.
    static let preferredFormatNames = "S16_LE, S32_LE, FLOAT_LE"
    static let defaultSampleRate = 48000
    static let defaultChannels = 2
    /// Period and buffer lengths asked for, in microseconds.
    static let periodTime: UInt32 = 20_000
    static let bufferTime: UInt32 = 500_000

    private struct State {
        var pcm: (any ALSACapturePCM)?
        var format: CaptureAudioFormat?
        var periodFrames = 0
        var bufferFrames = 0
        var lost = 0
    }

    /// A source for `device`, which must be an ALSA capture PCM; nothing is opened yet.
    init(device: CaptureDevice, request: CaptureAudioRequest = CaptureAudioRequest()) {
        self.device = device
        self.path = device.path
        self.localizedName = device.localizedName
        self.modelID = device.modelID
        self.request = request
    }

    deinit { close() }

    var videoFormat: CaptureVideoFormat? { nil }
    /// The format audio comes in, as the device really set it, once open.
    var audioFormat: CaptureAudioFormat? { state.withLock { $0.format } }
    /// Frames per period (the unit read at a time), once open.
    var periodFrames: Int { state.withLock { $0.periodFrames } }
    /// Frames the device's ring buffer holds, once open.
    var bufferFrames: Int { state.withLock { $0.bufferFrames } }
    /// Frames lost to overruns so far.
    var droppedByDevice: Int { state.withLock { $0.lost } }
    var lossLog: SampleLossLog? { losses }
    private let losses = SampleLossLog()

    // MARK: Opening

    func open() throws(CaptureError) {
        close()
        guard case .alsa(let alsa) = device.backend else {
            throw .device(.notACaptureDevice(path, reason: "not an audio capture device (it is a camera)"))
        }
        let pcm: any ALSACapturePCM
        do {
            pcm = try alsa.openCapture(path)
        } catch {
            throw .device(DeviceError(openingALSA: path, error, interface: alsa))
        }
        do {
            let (format, settings) = try configure(pcm)
            state.withLock { state in
                state = State(pcm: pcm, format: format, periodFrames: settings.periodFrames, bufferFrames: settings.bufferFrames)
            }
        } catch {
            pcm.close()
            throw error
        }
    }

    /// Interleaved access, the preferred sample format, rate and channels,
    /// a period of about 20 ms and a buffer of about 0.5 s; what was asked
    /// for checked against what the device set.
    private func configure(_ pcm: any ALSACapturePCM) throws(CaptureError) -> (CaptureAudioFormat, ALSACaptureSettings) {
        guard let sampleFormat = Self.preferredFormats.first(where: pcm.supports) else {
            throw .unsupported(path, reason: "takes none of the sample formats \(Self.preferredFormatNames)")
        }
        let settings: ALSACaptureSettings
        do {
            settings = try pcm.configure(ALSACaptureConfiguration(
                sampleFormat: sampleFormat, channels: request.channels ?? Self.defaultChannels,
                sampleRate: request.sampleRate ?? Self.defaultSampleRate,
                periodMicroseconds: Self.periodTime, bufferMicroseconds: Self.bufferTime))
        } catch {
            throw setupError(error)
        }
        if let asked = request.channels, settings.channels != asked {
            throw .unsupported(path, reason: "\(asked) channels are not offered; nearest: \(settings.channels)")
        }
        if let asked = request.sampleRate, settings.sampleRate != asked {
            throw .unsupported(path, reason: "\(asked) Hz is not offered; nearest: \(settings.sampleRate) Hz")
        }
        return (CaptureAudioFormat(sampleFormat: sampleFormat, sampleRate: settings.sampleRate, channels: settings.channels), settings)
    }

    /// The error for a failed parameter call.
    private func setupError(_ error: SystemCallError) -> CaptureError {
        switch error.errno {
        case EBUSY: return .device(.busy(path, reason: "device is busy: another process is capturing from it"))
        case ENODEV: return .deviceLost(path)
        default: return .io(path, error)
        }
    }

    // MARK: Capture loop

    func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let opened = state.withLock { ($0.pcm, $0.format, $0.periodFrames, $0.bufferFrames) }
        guard let pcm = opened.0, let format = opened.1 else {
            return .failed(.source(path, reason: "the device is not open"))
        }
        let (periodFrames, bufferFrames) = (opened.2, opened.3)
        let bytesPerFrame = format.sampleFormat.bytesPerSample * format.channels
        if let end = start(pcm) { return end }
        defer { pcm.drop() }

        var timing = AudioCaptureTiming(sampleRate: format.sampleRate)
        var afterOverrun = false

        while true {
            if stop.isRaised { return .stopped }
            let descriptors: [pollfd]
            do {
                descriptors = try pcm.pollDescriptors()
            } catch {
                return ended(error, pcm) ?? .failed(.io(path, error))
            }
            var entries = [pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0)] + descriptors
            let ready: Int
            do {
                ready = try Posix.poll(&entries, timeout: 1000)
            } catch {
                return .failed(.io(path, error))
            }
            if entries[0].revents != 0 || stop.isRaised { return .stopped }
            if ready == 0 { continue }
            let revents: Int16
            do {
                revents = try pcm.events(Array(entries.dropFirst()))
            } catch {
                if let end = ended(error, pcm) { return end }
                continue
            }
            if Int32(revents) & Int32(POLLERR | POLLHUP | POLLNVAL) != 0 {
                // An overrun or a suspend shows as POLLERR; the state says which.
                let pcmState = pcm.state
                switch pcmState {
                case .disconnected:
                    return .deviceLost(path)
                case .xrun, .suspended:
                    let cause = SystemCallError(call: "snd_pcm_state", errno: pcmState == .xrun ? EPIPE : ESTRPIPE)
                    if let end = recover(pcm, cause) { return end }
                    afterOverrun = true
                    continue
                default:
                    break
                }
            }
            guard Int32(revents) & Int32(POLLIN) != 0 else { continue }

            // Read what is there in whole periods, stamping the first frame.
            let available: Int
            do {
                available = try pcm.availableFrames()
            } catch {
                if let end = recover(pcm, error) { return end }
                afterOverrun = true
                continue
            }
            let frames = min(available / periodFrames * periodFrames, max(bufferFrames, periodFrames))
            guard frames > 0 else { continue }
            let stamp = firstFrameTime(pcm, sampleRate: format.sampleRate)
            var outcome: Result<Int, SystemCallError> = .success(0)
            let storage = SampleStorage(count: frames * bytesPerFrame) { bytes in
                outcome = Result { () throws(SystemCallError) in try pcm.read(into: bytes, frames: frames) }
            }
            let read: Int
            switch outcome {
            case .success(let count):
                read = min(count, frames)
            case .failure(let error):
                if error.errno == EAGAIN { continue }
                if let end = recover(pcm, error) { return end }
                afterOverrun = true
                continue
            }
            guard read > 0 else { continue }
            let lost: Int
            if afterOverrun, stamp.fromDevice {
                lost = timing.record(start: stamp.nanoseconds, frames: read, afterOverrun: true)
            } else {
                // Without the device's stamp the gap is unknown; a full buffer is the least an overrun loses.
                lost = afterOverrun ? bufferFrames : 0
                _ = timing.record(start: stamp.nanoseconds, frames: read, afterOverrun: false)
            }
            if lost > 0 {
                state.withLock { $0.lost += lost }
                // The lost frames came just before the ones read now.
                let rate = Int64(max(1, format.sampleRate))
                losses.record(lost, atNanoseconds: stamp.nanoseconds - Int64(lost) * 1_000_000_000 / rate)
            }
            afterOverrun = false
            let chunk = read == frames ? storage : SampleStorage(copying: UnsafeRawBufferPointer(rebasing: storage.bytes.prefix(read * bytesPerFrame)))
            deliver(.audio(AudioSampleBuffer(
                storage: chunk, format: format.sampleFormat, channels: format.channels, sampleRate: format.sampleRate,
                frameCount: read, presentationTime: MediaTime(value: stamp.nanoseconds, timescale: MonotonicClock.timescale))))
        }
    }

    /// snd_pcm_prepare (after open or a stop) and snd_pcm_start.
    private func start(_ pcm: any ALSACapturePCM) -> CaptureEnd? {
        do {
            if pcm.state != .prepared { try pcm.prepare() }
            try pcm.start()
            return nil
        } catch {
            return ended(error, pcm) ?? .failed(.io(path, error))
        }
    }

    /// Recovers from an overrun (EPIPE: prepare and start again) or a
    /// suspend (ESTRPIPE: resume, else prepare); nil when capture goes on.
    private func recover(_ pcm: any ALSACapturePCM, _ error: SystemCallError) -> CaptureEnd? {
        switch error.errno {
        case EPIPE:
            return start(pcm)
        case ESTRPIPE:
            var resumed = false
            while true {
                do {
                    try pcm.resume()
                    resumed = true
                } catch where error.errno == EAGAIN {
                    // Still waking up; alsa-lib's own examples wait like this.
                    Posix.sleep(nanoseconds: 10_000_000)
                    continue
                } catch {}
                break
            }
            // Devices that cannot resume need preparing again.
            if !resumed || pcm.state != .running { return start(pcm) }
            return nil
        case EAGAIN:
            return nil
        default:
            return ended(error, pcm) ?? .failed(.io(path, error))
        }
    }

    /// The end for an error that means the device is gone; nil for others.
    private func ended(_ error: SystemCallError, _ pcm: any ALSACapturePCM) -> CaptureEnd? {
        if error.errno == ENODEV || pcm.state == .disconnected { return .deviceLost(path) }
        return nil
    }

    /// The capture time of the first frame about to be read: from the
    /// device's stamp of its latest frame and how many frames were waiting
    /// then, else from the clock now less the frames still waiting.
    private func firstFrameTime(_ pcm: any ALSACapturePCM, sampleRate: Int) -> (nanoseconds: Int64, fromDevice: Bool) {
        if let stamp = pcm.timestamp() {
            return (AudioCaptureTiming.firstFrameTime(timestamp: stamp.nanoseconds, available: stamp.available, sampleRate: sampleRate), true)
        }
        let now = MonotonicClock.nowNanoseconds()
        guard let delay = pcm.delay(), delay > 0 else { return (now, false) }
        return (AudioCaptureTiming.firstFrameTime(timestamp: now, available: delay, sampleRate: sampleRate), false)
    }

    /// Stops capture and closes the PCM. Chunks already delivered own their bytes.
    func close() {
        let pcm = state.withLock { state -> (any ALSACapturePCM)? in
            defer { state.pcm = nil }
            return state.pcm
        }
        pcm?.close()
    }
}
