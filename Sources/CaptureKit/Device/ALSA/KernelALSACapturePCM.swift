import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// A capture PCM opened through alsa-lib. Every call that can fail goes
/// through `negatedErrnoCall`: -EINTR is retried, and any other negative
/// result is thrown naming the call, its errno kept.
final class KernelALSACapturePCM: ALSACapturePCM {
    let name: String
    private var pcm: OpaquePointer?

    /// snd_pcm_open for capture, non-blocking.
    init(name: String) throws(SystemCallError) {
        self.name = name
        var handle: OpaquePointer?
        // calsa_PCM_NONBLOCK: SND_PCM_NONBLOCK is a macro Swift does not import.
        try negatedErrnoCall("snd_pcm_open(\(name))") { Int(snd_pcm_open(&handle, name, SND_PCM_STREAM_CAPTURE, calsa_PCM_NONBLOCK)) }
        guard let handle else { throw SystemCallError(call: "snd_pcm_open(\(name))", errno: ENOMEM) }
        pcm = handle
    }

    deinit { close() }

    /// The open handle; EBADF once closed.
    private func handle(_ call: String) throws(SystemCallError) -> OpaquePointer {
        guard let pcm else { throw SystemCallError(call: call, errno: EBADF) }
        return pcm
    }

    private static func alsaFormat(_ format: AudioSampleFormat) -> snd_pcm_format_t? {
        switch format {
        case .u8: return SND_PCM_FORMAT_U8
        case .s16: return SND_PCM_FORMAT_S16_LE
        case .s32: return SND_PCM_FORMAT_S32_LE
        case .f32: return SND_PCM_FORMAT_FLOAT_LE
        case .f64: return SND_PCM_FORMAT_FLOAT64_LE
        case .s16Planar, .s32Planar, .f32Planar: return nil
        }
    }

    func supports(_ format: AudioSampleFormat) -> Bool {
        guard let pcm, let alsaFormat = Self.alsaFormat(format) else { return false }
        var allocated: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&allocated) == 0, let hw = allocated else { return false }
        defer { snd_pcm_hw_params_free(hw) }
        guard snd_pcm_hw_params_any(pcm, hw) >= 0,
              snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED) == 0 else { return false }
        return snd_pcm_hw_params_test_format(pcm, hw, alsaFormat) == 0
    }

    func configure(_ request: ALSACaptureConfiguration) throws(SystemCallError) -> ALSACaptureSettings {
        let pcm = try handle("snd_pcm_hw_params")
        guard let format = Self.alsaFormat(request.sampleFormat) else { throw SystemCallError(call: "snd_pcm_hw_params_set_format", errno: EINVAL) }
        var allocated: OpaquePointer?
        try negatedErrnoCall("snd_pcm_hw_params_malloc") { Int(snd_pcm_hw_params_malloc(&allocated)) }
        guard let hw = allocated else { throw SystemCallError(call: "snd_pcm_hw_params_malloc", errno: ENOMEM) }
        defer { snd_pcm_hw_params_free(hw) }
        try negatedErrnoCall("snd_pcm_hw_params_any") { Int(snd_pcm_hw_params_any(pcm, hw)) }
        try negatedErrnoCall("snd_pcm_hw_params_set_access") { Int(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) }
        try negatedErrnoCall("snd_pcm_hw_params_set_format") { Int(snd_pcm_hw_params_set_format(pcm, hw, format)) }
        var channels = UInt32(max(request.channels, 1))
        try negatedErrnoCall("snd_pcm_hw_params_set_channels_near") { Int(snd_pcm_hw_params_set_channels_near(pcm, hw, &channels)) }
        var rate = UInt32(max(request.sampleRate, 1))
        var direction: Int32 = 0
        try negatedErrnoCall("snd_pcm_hw_params_set_rate_near") { Int(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &direction)) }
        var period = request.periodMicroseconds
        direction = 0
        try negatedErrnoCall("snd_pcm_hw_params_set_period_time_near") { Int(snd_pcm_hw_params_set_period_time_near(pcm, hw, &period, &direction)) }
        var buffer = request.bufferMicroseconds
        direction = 0
        try negatedErrnoCall("snd_pcm_hw_params_set_buffer_time_near") { Int(snd_pcm_hw_params_set_buffer_time_near(pcm, hw, &buffer, &direction)) }
        try negatedErrnoCall("snd_pcm_hw_params") { Int(snd_pcm_hw_params(pcm, hw)) }

        // Read back what the device really set.
        var periodFrames: snd_pcm_uframes_t = 0
        var bufferFrames: snd_pcm_uframes_t = 0
        direction = 0
        try negatedErrnoCall("snd_pcm_hw_params_get_period_size") { Int(snd_pcm_hw_params_get_period_size(hw, &periodFrames, &direction)) }
        try negatedErrnoCall("snd_pcm_hw_params_get_buffer_size") { Int(snd_pcm_hw_params_get_buffer_size(hw, &bufferFrames)) }
        try negatedErrnoCall("snd_pcm_hw_params_get_rate") { Int(snd_pcm_hw_params_get_rate(hw, &rate, &direction)) }
        try negatedErrnoCall("snd_pcm_hw_params_get_channels") { Int(snd_pcm_hw_params_get_channels(hw, &channels)) }
        try configureSoftware(pcm, periodFrames: periodFrames)
        return ALSACaptureSettings(channels: Int(channels), sampleRate: Int(rate), periodFrames: max(Int(periodFrames), 1),
                                   bufferFrames: Int(bufferFrames))
    }

    /// Software parameters: wake once a period is there, and stamp on
    /// CLOCK_MONOTONIC so chunks share the session's clock.
    private func configureSoftware(_ pcm: OpaquePointer, periodFrames: snd_pcm_uframes_t) throws(SystemCallError) {
        var allocated: OpaquePointer?
        try negatedErrnoCall("snd_pcm_sw_params_malloc") { Int(snd_pcm_sw_params_malloc(&allocated)) }
        guard let sw = allocated else { throw SystemCallError(call: "snd_pcm_sw_params_malloc", errno: ENOMEM) }
        defer { snd_pcm_sw_params_free(sw) }
        try negatedErrnoCall("snd_pcm_sw_params_current") { Int(snd_pcm_sw_params_current(pcm, sw)) }
        try negatedErrnoCall("snd_pcm_sw_params_set_avail_min") { Int(snd_pcm_sw_params_set_avail_min(pcm, sw, max(periodFrames, 1))) }
        try negatedErrnoCall("snd_pcm_sw_params_set_tstamp_mode") { Int(snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE)) }
        try negatedErrnoCall("snd_pcm_sw_params_set_tstamp_type") { Int(snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC)) }
        try negatedErrnoCall("snd_pcm_sw_params") { Int(snd_pcm_sw_params(pcm, sw)) }
    }

    func pollDescriptors() throws(SystemCallError) -> [pollfd] {
        let pcm = try handle("snd_pcm_poll_descriptors")
        let count = try negatedErrnoCall("snd_pcm_poll_descriptors_count") { Int(snd_pcm_poll_descriptors_count(pcm)) }
        guard count > 0 else { throw SystemCallError(call: "snd_pcm_poll_descriptors_count", errno: EINVAL) }
        var entries = [pollfd](repeating: pollfd(), count: count)
        let filled = try entries.withUnsafeMutableBufferPointer { (buffer) throws(SystemCallError) in
            try negatedErrnoCall("snd_pcm_poll_descriptors") { Int(snd_pcm_poll_descriptors(pcm, buffer.baseAddress, UInt32(count))) }
        }
        guard filled > 0 else { throw SystemCallError(call: "snd_pcm_poll_descriptors", errno: EINVAL) }
        return Array(entries.prefix(filled))
    }

    func events(_ descriptors: [pollfd]) throws(SystemCallError) -> Int16 {
        let pcm = try handle("snd_pcm_poll_descriptors_revents")
        var entries = descriptors
        var revents: UInt16 = 0
        _ = try entries.withUnsafeMutableBufferPointer { (buffer) throws(SystemCallError) in
            try negatedErrnoCall("snd_pcm_poll_descriptors_revents") {
                Int(snd_pcm_poll_descriptors_revents(pcm, buffer.baseAddress, UInt32(buffer.count), &revents))
            }
        }
        return Int16(bitPattern: revents)
    }

    var state: ALSAPCMState {
        guard let pcm else { return .disconnected }
        switch snd_pcm_state(pcm) {
        case SND_PCM_STATE_OPEN: return .open
        case SND_PCM_STATE_SETUP: return .setup
        case SND_PCM_STATE_PREPARED: return .prepared
        case SND_PCM_STATE_RUNNING: return .running
        case SND_PCM_STATE_XRUN: return .xrun
        case SND_PCM_STATE_DRAINING: return .draining
        case SND_PCM_STATE_PAUSED: return .paused
        case SND_PCM_STATE_SUSPENDED: return .suspended
        default: return .disconnected
        }
    }

    func prepare() throws(SystemCallError) {
        let pcm = try handle("snd_pcm_prepare")
        try negatedErrnoCall("snd_pcm_prepare") { Int(snd_pcm_prepare(pcm)) }
    }

    func start() throws(SystemCallError) {
        let pcm = try handle("snd_pcm_start")
        try negatedErrnoCall("snd_pcm_start") { Int(snd_pcm_start(pcm)) }
    }

    func resume() throws(SystemCallError) {
        let pcm = try handle("snd_pcm_resume")
        try negatedErrnoCall("snd_pcm_resume") { Int(snd_pcm_resume(pcm)) }
    }

    func drop() {
        if let pcm { snd_pcm_drop(pcm) }
    }

    func availableFrames() throws(SystemCallError) -> Int {
        let pcm = try handle("snd_pcm_avail_update")
        return try negatedErrnoCall("snd_pcm_avail_update") { Int(snd_pcm_avail_update(pcm)) }
    }

    func timestamp() -> ALSATimestamp? {
        guard let pcm else { return nil }
        var available: snd_pcm_uframes_t = 0
        var stamp = timespec()
        guard snd_pcm_htimestamp(pcm, &available, &stamp) == 0, stamp.tv_sec != 0 || stamp.tv_nsec != 0 else { return nil }
        return ALSATimestamp(available: Int(available), nanoseconds: Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec))
    }

    func delay() -> Int? {
        guard let pcm else { return nil }
        var delay: snd_pcm_sframes_t = 0
        guard snd_pcm_delay(pcm, &delay) == 0 else { return nil }
        return Int(delay)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, frames: Int) throws(SystemCallError) -> Int {
        let pcm = try handle("snd_pcm_readi")
        return try negatedErrnoCall("snd_pcm_readi") { Int(snd_pcm_readi(pcm, buffer.baseAddress, snd_pcm_uframes_t(frames))) }
    }

    func close() {
        guard let pcm else { return }
        self.pcm = nil
        snd_pcm_drop(pcm)
        snd_pcm_close(pcm)
    }
}
