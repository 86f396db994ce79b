import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// A microphone as a capture source: an ALSA capture PCM (`hw:Loopback,1,0`,
/// `plughw:…`, `default`) read in whole periods of about 20 ms. Each chunk is
/// stamped on CLOCK_MONOTONIC from the device's own timestamps; overruns are
/// recovered from and the frames they lost counted in `droppedByDevice`.
public final class ALSACaptureSource: CaptureSource, @unchecked Sendable {
    // @unchecked: the open PCM and counters are guarded by its state lock; the capture loop reads the PCM on the capture thread alone.
    public var mediaType: MediaType { .audio }
    public let path: String
    public let localizedName: String
    public let modelID: String?
    /// What was asked for.
    public let request: CaptureAudioRequest

    private let device: CaptureDevice
    private let state = Locked(State())

    /// Sample formats in order of preference: what the device takes first.
    static let preferredFormats: [(snd_pcm_format_t, AudioSampleFormat)] = [
        (SND_PCM_FORMAT_S16_LE, .s16), (SND_PCM_FORMAT_S32_LE, .s32), (SND_PCM_FORMAT_FLOAT_LE, .f32),
    ]
    static let defaultSampleRate = 48000
    static let defaultChannels = 2
    /// Period and buffer lengths asked for, in microseconds.
    static let periodTime: UInt32 = 20_000
    static let bufferTime: UInt32 = 500_000

    private struct State {
        var pcm: OpaquePointer?
        var format: CaptureAudioFormat?
        var periodFrames = 0
        var bufferFrames = 0
        var lost = 0
    }

    /// A source for `device`, which must be an ALSA capture PCM; nothing is opened yet.
    public init(device: CaptureDevice, request: CaptureAudioRequest = CaptureAudioRequest()) {
        self.device = device
        self.path = device.path
        self.localizedName = device.localizedName
        self.modelID = device.modelID
        self.request = request
    }

    deinit { close() }

    public var videoFormat: CaptureVideoFormat? { nil }
    /// The format audio comes in, as the device really set it, once open.
    public var audioFormat: CaptureAudioFormat? { state.withLock { $0.format } }
    /// Frames per period (the unit read at a time), once open.
    public var periodFrames: Int { state.withLock { $0.periodFrames } }
    /// Frames the device's ring buffer holds, once open.
    public var bufferFrames: Int { state.withLock { $0.bufferFrames } }
    /// Frames lost to overruns so far.
    public var droppedByDevice: Int { state.withLock { $0.lost } }

    // MARK: Opening

    public func open() throws(CaptureError) {
        close()
        guard case .alsa(let alsa) = device.backend else {
            throw .device(.notACaptureDevice(path, reason: "not an audio capture device (it is a camera)"))
        }
        var handle: OpaquePointer?
        let opened = snd_pcm_open(&handle, path, SND_PCM_STREAM_CAPTURE, calsa_PCM_NONBLOCK)
        guard opened == 0, let pcm = handle else {
            throw .device(DeviceError(openingALSA: path, SystemCallError(call: "snd_pcm_open", errno: -opened), interface: alsa))
        }
        do {
            let (format, period, buffer) = try configureHardware(pcm)
            try configureSoftware(pcm, periodFrames: period)
            state.withLock { state in
                state = State(pcm: pcm, format: format, periodFrames: period, bufferFrames: buffer)
            }
        } catch {
            snd_pcm_close(pcm)
            throw error
        }
    }

    /// Hardware parameters: interleaved access, the preferred sample format,
    /// rate and channels, a period of about 20 ms and a buffer of about 0.5 s.
    private func configureHardware(_ pcm: OpaquePointer) throws(CaptureError) -> (CaptureAudioFormat, Int, Int) {
        var allocated: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&allocated) == 0, let hw = allocated else {
            throw .io(path, SystemCallError(call: "snd_pcm_hw_params_malloc", errno: ENOMEM))
        }
        defer { snd_pcm_hw_params_free(hw) }
        try check("snd_pcm_hw_params_any", snd_pcm_hw_params_any(pcm, hw))
        try check("snd_pcm_hw_params_set_access", snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED))

        guard let (alsaFormat, sampleFormat) = Self.preferredFormats.first(where: { snd_pcm_hw_params_test_format(pcm, hw, $0.0) == 0 }) else {
            throw .unsupported(path, reason: "takes none of the sample formats S16_LE, S32_LE, FLOAT_LE")
        }
        try check("snd_pcm_hw_params_set_format", snd_pcm_hw_params_set_format(pcm, hw, alsaFormat))

        var channels = UInt32(request.channels ?? Self.defaultChannels)
        try check("snd_pcm_hw_params_set_channels_near", snd_pcm_hw_params_set_channels_near(pcm, hw, &channels))
        if let asked = request.channels, Int(channels) != asked {
            throw .unsupported(path, reason: "\(asked) channels are not offered; nearest: \(channels)")
        }
        var rate = UInt32(request.sampleRate ?? Self.defaultSampleRate)
        var direction: Int32 = 0
        try check("snd_pcm_hw_params_set_rate_near", snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &direction))
        if let asked = request.sampleRate, Int(rate) != asked {
            throw .unsupported(path, reason: "\(asked) Hz is not offered; nearest: \(rate) Hz")
        }
        var period = Self.periodTime
        direction = 0
        try check("snd_pcm_hw_params_set_period_time_near", snd_pcm_hw_params_set_period_time_near(pcm, hw, &period, &direction))
        var buffer = Self.bufferTime
        direction = 0
        try check("snd_pcm_hw_params_set_buffer_time_near", snd_pcm_hw_params_set_buffer_time_near(pcm, hw, &buffer, &direction))
        try check("snd_pcm_hw_params", snd_pcm_hw_params(pcm, hw))

        // Read back what the device really set.
        var periodFrames: snd_pcm_uframes_t = 0
        var bufferFrames: snd_pcm_uframes_t = 0
        direction = 0
        try check("snd_pcm_hw_params_get_period_size", snd_pcm_hw_params_get_period_size(hw, &periodFrames, &direction))
        try check("snd_pcm_hw_params_get_buffer_size", snd_pcm_hw_params_get_buffer_size(hw, &bufferFrames))
        try check("snd_pcm_hw_params_get_rate", snd_pcm_hw_params_get_rate(hw, &rate, &direction))
        try check("snd_pcm_hw_params_get_channels", snd_pcm_hw_params_get_channels(hw, &channels))
        let format = CaptureAudioFormat(sampleFormat: sampleFormat, sampleRate: Int(rate), channels: Int(channels))
        return (format, max(Int(periodFrames), 1), Int(bufferFrames))
    }

    /// Software parameters: wake once a period is there, and stamp on
    /// CLOCK_MONOTONIC so chunks share the session's clock.
    private func configureSoftware(_ pcm: OpaquePointer, periodFrames: Int) throws(CaptureError) {
        var allocated: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&allocated) == 0, let sw = allocated else {
            throw .io(path, SystemCallError(call: "snd_pcm_sw_params_malloc", errno: ENOMEM))
        }
        defer { snd_pcm_sw_params_free(sw) }
        try check("snd_pcm_sw_params_current", snd_pcm_sw_params_current(pcm, sw))
        try check("snd_pcm_sw_params_set_avail_min", snd_pcm_sw_params_set_avail_min(pcm, sw, snd_pcm_uframes_t(periodFrames)))
        try check("snd_pcm_sw_params_set_tstamp_mode", snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE))
        try check("snd_pcm_sw_params_set_tstamp_type", snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC))
        try check("snd_pcm_sw_params", snd_pcm_sw_params(pcm, sw))
    }

    /// Throws for a negative alsa-lib result (a negated errno), naming the call.
    private func check(_ call: String, _ result: Int32) throws(CaptureError) {
        guard result < 0 else { return }
        if -result == EBUSY { throw .device(.busy(path, reason: "device is busy: another process is capturing from it")) }
        if -result == ENODEV { throw .deviceLost(path) }
        throw .io(path, SystemCallError(call: call, errno: -result))
    }

    // MARK: Capture loop

    public func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let opened = state.withLock { ($0.pcm, $0.format, $0.periodFrames, $0.bufferFrames) }
        guard let pcm = opened.0, let format = opened.1 else {
            return .failed(.source(path, reason: "the device is not open"))
        }
        let (periodFrames, bufferFrames) = (opened.2, opened.3)
        let bytesPerFrame = format.sampleFormat.bytesPerSample * format.channels
        if let end = start(pcm) { return end }
        defer { snd_pcm_drop(pcm) }

        let count = Int(snd_pcm_poll_descriptors_count(pcm))
        guard count > 0 else { return .failed(.io(path, SystemCallError(call: "snd_pcm_poll_descriptors_count", errno: EINVAL))) }
        var timing = AudioCaptureTiming(sampleRate: format.sampleRate)
        var afterOverrun = false

        while true {
            if stop.isRaised { return .stopped }
            var entries = [pollfd](repeating: pollfd(), count: count + 1)
            let filled = entries.withUnsafeMutableBufferPointer { snd_pcm_poll_descriptors(pcm, $0.baseAddress! + 1, UInt32(count)) }
            guard filled > 0 else { return ended(Int32(filled), pcm) ?? .failed(.io(path, SystemCallError(call: "snd_pcm_poll_descriptors", errno: EINVAL))) }
            entries[0] = pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&entries, nfds_t(Int(filled) + 1), 1000)
            if ready < 0 {
                if errno == EINTR { continue }
                return .failed(.io(path, SystemCallError(call: "poll", errno: errno)))
            }
            if entries[0].revents != 0 || stop.isRaised { return .stopped }
            if ready == 0 { continue }
            var revents: UInt16 = 0
            let demangled = entries.withUnsafeMutableBufferPointer {
                snd_pcm_poll_descriptors_revents(pcm, $0.baseAddress! + 1, UInt32(filled), &revents)
            }
            if demangled < 0 {
                if let end = ended(demangled, pcm) { return end }
                continue
            }
            if Int32(revents) & Int32(POLLERR | POLLHUP | POLLNVAL) != 0 {
                // An overrun or a suspend shows as POLLERR; the state says which.
                let pcmState = snd_pcm_state(pcm)
                if pcmState == SND_PCM_STATE_DISCONNECTED { return .deviceLost(path) }
                if pcmState == SND_PCM_STATE_XRUN || pcmState == SND_PCM_STATE_SUSPENDED {
                    if let end = recover(pcm, pcmState == SND_PCM_STATE_XRUN ? -EPIPE : -ESTRPIPE) { return end }
                    afterOverrun = true
                    continue
                }
            }
            guard Int32(revents) & Int32(POLLIN) != 0 else { continue }

            // Read what is there in whole periods, stamping the first frame.
            let available = snd_pcm_avail_update(pcm)
            if available < 0 {
                if let end = recover(pcm, Int32(available)) { return end }
                afterOverrun = true
                continue
            }
            let frames = min(Int(available) / periodFrames * periodFrames, max(bufferFrames, periodFrames))
            guard frames > 0 else { continue }
            let stamp = firstFrameTime(pcm, sampleRate: format.sampleRate)
            var read = 0
            let storage = SampleStorage(count: frames * bytesPerFrame) { bytes in
                read = Int(snd_pcm_readi(pcm, bytes.baseAddress, snd_pcm_uframes_t(frames)))
            }
            if read < 0 {
                if read == -Int(EAGAIN) { continue }
                if let end = recover(pcm, Int32(read)) { return end }
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
            if lost > 0 { state.withLock { $0.lost += lost } }
            afterOverrun = false
            let chunk = read == frames ? storage : SampleStorage(copying: UnsafeRawBufferPointer(rebasing: storage.bytes.prefix(read * bytesPerFrame)))
            deliver(.audio(AudioSampleBuffer(
                storage: chunk, format: format.sampleFormat, channels: format.channels, sampleRate: format.sampleRate,
                frameCount: read, presentationTime: MediaTime(value: stamp.nanoseconds, timescale: MonotonicClock.timescale))))
        }
    }

    /// snd_pcm_prepare (after open or a stop) and snd_pcm_start.
    private func start(_ pcm: OpaquePointer) -> CaptureEnd? {
        if snd_pcm_state(pcm) != SND_PCM_STATE_PREPARED {
            let prepared = snd_pcm_prepare(pcm)
            if prepared < 0 { return ended(prepared, pcm) ?? .failed(.io(path, SystemCallError(call: "snd_pcm_prepare", errno: -prepared))) }
        }
        let started = snd_pcm_start(pcm)
        if started < 0 { return ended(started, pcm) ?? .failed(.io(path, SystemCallError(call: "snd_pcm_start", errno: -started))) }
        return nil
    }

    /// Recovers from an overrun (-EPIPE: prepare and start again) or a
    /// suspend (-ESTRPIPE: resume, else prepare); nil when capture goes on.
    private func recover(_ pcm: OpaquePointer, _ code: Int32) -> CaptureEnd? {
        switch -code {
        case EPIPE:
            return start(pcm)
        case ESTRPIPE:
            var resumed = snd_pcm_resume(pcm)
            while resumed == -EAGAIN {
                usleep(10_000)
                resumed = snd_pcm_resume(pcm)
            }
            // Devices that cannot resume need preparing again.
            if resumed < 0 || snd_pcm_state(pcm) != SND_PCM_STATE_RUNNING { return start(pcm) }
            return nil
        case EAGAIN:
            return nil
        default:
            return ended(code, pcm) ?? .failed(.io(path, SystemCallError(call: "snd_pcm_readi", errno: -code)))
        }
    }

    /// The end for an error that means the device is gone; nil for others.
    private func ended(_ code: Int32, _ pcm: OpaquePointer) -> CaptureEnd? {
        if -code == ENODEV || snd_pcm_state(pcm) == SND_PCM_STATE_DISCONNECTED { return .deviceLost(path) }
        return nil
    }

    /// The capture time of the first frame about to be read: from the
    /// device's stamp of its latest frame and how many frames were waiting
    /// then, else from the clock now less the frames still waiting.
    private func firstFrameTime(_ pcm: OpaquePointer, sampleRate: Int) -> (nanoseconds: Int64, fromDevice: Bool) {
        var available: snd_pcm_uframes_t = 0
        var stamp = timespec()
        if snd_pcm_htimestamp(pcm, &available, &stamp) == 0, stamp.tv_sec != 0 || stamp.tv_nsec != 0 {
            let nanoseconds = Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec)
            return (AudioCaptureTiming.firstFrameTime(timestamp: nanoseconds, available: Int(available), sampleRate: sampleRate), true)
        }
        let now = MonotonicClock.nowNanoseconds()
        var delay: snd_pcm_sframes_t = 0
        guard snd_pcm_delay(pcm, &delay) == 0, delay > 0 else { return (now, false) }
        return (AudioCaptureTiming.firstFrameTime(timestamp: now, available: Int(delay), sampleRate: sampleRate), false)
    }

    /// Stops capture and closes the PCM. Chunks already delivered own their bytes.
    public func close() {
        let pcm = state.withLock { state -> OpaquePointer? in
            defer { state.pcm = nil }
            return state.pcm
        }
        if let pcm {
            snd_pcm_drop(pcm)
            snd_pcm_close(pcm)
        }
    }
}
