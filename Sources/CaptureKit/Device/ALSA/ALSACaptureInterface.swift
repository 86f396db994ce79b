#if canImport(Glibc)
import Glibc
#endif

/// The part of the ALSA seam a microphone streams through: an opened
/// capture PCM. Each method is one alsa-lib call (or, for `configure`, the
/// fixed sequence that sets the hardware and software parameters) and
/// answers what alsa-lib answered, errors as the errno it returned negated
/// (an overrun is EPIPE, a vanished device ENODEV, nothing to read EAGAIN),
/// so the capture loop over it runs unchanged over a fake microphone in
/// tests. `KernelALSA` opens real ones. Used by one thread at a time: the
/// capture loop while it runs, its owner before and after.
protocol ALSACapturePCM: AnyObject {
    /// Whether the device takes `format` (snd_pcm_hw_params_test_format over every configuration).
    func supports(_ format: AudioSampleFormat) -> Bool
    /// Sets interleaved access, the sample format, and the rate, channels,
    /// period and buffer nearest those asked for; then the software
    /// parameters: wake once a period is there, and stamp frames on
    /// CLOCK_MONOTONIC. Answers what the device really set.
    func configure(_ request: ALSACaptureConfiguration) throws(SystemCallError) -> ALSACaptureSettings
    /// snd_pcm_poll_descriptors: what to poll(2) for.
    func pollDescriptors() throws(SystemCallError) -> [pollfd]
    /// snd_pcm_poll_descriptors_revents: what the events poll(2) reported
    /// on `descriptors` mean for the PCM (POLLIN: frames to read; POLLERR:
    /// an overrun, a suspend or a disconnect — `state` says which).
    func events(_ descriptors: [pollfd]) throws(SystemCallError) -> Int16
    /// snd_pcm_state.
    var state: ALSAPCMState { get }
    /// snd_pcm_prepare: ready to start, the ring emptied.
    func prepare() throws(SystemCallError)
    /// snd_pcm_start.
    func start() throws(SystemCallError)
    /// snd_pcm_resume after a suspend; EAGAIN while the device is still waking.
    func resume() throws(SystemCallError)
    /// snd_pcm_drop: stops at once, dropping what was not read.
    func drop()
    /// snd_pcm_avail_update: frames waiting to be read.
    func availableFrames() throws(SystemCallError) -> Int
    /// snd_pcm_htimestamp: the device's CLOCK_MONOTONIC stamp of its latest
    /// frame and the frames waiting then; nil when it gives none.
    func timestamp() -> ALSATimestamp?
    /// snd_pcm_delay: frames between the device capturing one and it being read; nil when unknown.
    func delay() -> Int?
    /// snd_pcm_readi of up to `frames` interleaved frames into `buffer`:
    /// answers the frames read.
    func read(into buffer: UnsafeMutableRawBufferPointer, frames: Int) throws(SystemCallError) -> Int
    /// snd_pcm_close. Safe to call more than once.
    func close()
}

/// What a capture PCM is asked to be set to.
struct ALSACaptureConfiguration: Sendable, Hashable {
    /// Interleaved samples of this format (little-endian).
    var sampleFormat: AudioSampleFormat
    /// The channels and the rate (frames per second) asked for; the nearest the device offers is set.
    var channels: Int
    var sampleRate: Int
    /// The period (how much is read at a time) and the ring buffer, in microseconds.
    var periodMicroseconds: UInt32
    var bufferMicroseconds: UInt32

    init(sampleFormat: AudioSampleFormat, channels: Int, sampleRate: Int, periodMicroseconds: UInt32, bufferMicroseconds: UInt32) {
        self.sampleFormat = sampleFormat
        self.channels = channels
        self.sampleRate = sampleRate
        self.periodMicroseconds = periodMicroseconds
        self.bufferMicroseconds = bufferMicroseconds
    }
}

/// What a capture PCM was really set to.
struct ALSACaptureSettings: Sendable, Hashable {
    var channels: Int
    /// Frames per second.
    var sampleRate: Int
    /// Frames in a period (what is read at a time) and in the ring buffer.
    var periodFrames: Int
    var bufferFrames: Int

    init(channels: Int, sampleRate: Int, periodFrames: Int, bufferFrames: Int) {
        self.channels = channels
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
    }
}

/// The device's stamp of its latest captured frame.
struct ALSATimestamp: Sendable, Hashable {
    /// Frames waiting to be read when the stamp was taken.
    var available: Int
    /// CLOCK_MONOTONIC nanoseconds.
    var nanoseconds: Int64

    init(available: Int, nanoseconds: Int64) {
        self.available = available
        self.nanoseconds = nanoseconds
    }
}

/// snd_pcm_state_t.
enum ALSAPCMState: Sendable, Hashable {
    /// Opened; parameters set; ready to start; capturing.
    case open, setup, prepared, running
    /// An overrun: the ring filled before it was read.
    case xrun
    /// Draining, paused, or suspended with the system (resume, else prepare again).
    case draining, paused, suspended
    /// The device went away.
    case disconnected
}
