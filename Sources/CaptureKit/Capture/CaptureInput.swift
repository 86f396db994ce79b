import Synchronization

/// A source attached to a capture session, like AVCaptureDeviceInput: the
/// session opens it, runs its capture loop, and hands its samples to every
/// output together with the input they came from.
public class CaptureInput: @unchecked Sendable {
    // @unchecked: `isOpen`, `locking` and `processor` are guarded by `lock`; the meter is Sendable; `source` is replaced only before the input is opened (a session preset, see `prepare(sessionPreset:)`), never while a thread captures from it.
    package internal(set) var source: any CaptureSource
    /// The encoders sinks share for this input's frames, one per setting.
    let compression = CompressionStages()
    private var isOpen = false
    private let lock = Lock()

    package init(source: any CaptureSource) {
        self.source = source
    }

    /// Whether the session takes the camera's configuration lock while it
    /// runs (as `lockForConfiguration()` would: an advisory lock, and V4L2's
    /// record priority on the capture handle), so that no other program
    /// changes its format or controls meanwhile. On by default; it applies
    /// to V4L2 cameras. Set before the session starts.
    public var locksConfiguration: Bool {
        get { lock.withLock { locking } }
        set { lock.withLock { locking = newValue } }
    }
    private var locking = true

    /// Changes every video frame of this input once, before any output sees
    /// it (such as a `TextOverlayRenderer` burning in a time stamp), so
    /// that all outputs of the input get the same frame. nil: frames pass
    /// as captured. Set before the session starts; a running loop keeps the
    /// one it started with.
    package var videoFrameProcessor: (any VideoFrameProcessor)? {
        get { lock.withLock { processor } }
        set { lock.withLock { processor = newValue } }
    }
    private var processor: (any VideoFrameProcessor)?

    /// The format of the frames outputs get from this input: the source's
    /// (once it is open), as the `videoFrameProcessor` changes it; nil for
    /// a microphone or an input not opened yet.
    public var videoFormat: CaptureVideoFormat? {
        guard let format = source.videoFormat else { return nil }
        return videoFrameProcessor?.outputFormat(for: format) ?? format
    }

    public var mediaType: MediaType { source.mediaType }

    /// Samples the session has taken from this input since it was made:
    /// frames of a camera, sample frames (one per channel set) of a microphone.
    public var capturedSampleCount: Int { captured.load(ordering: .relaxed) }
    /// Samples the device itself lost (kernel sequence gaps, ALSA overruns)
    /// while the session captured from it.
    public var droppedSampleCount: Int { source.droppedByDevice }
    private let captured = Atomic<Int>(0)

    /// Counts a sample the session hands to its outputs (on the capture thread).
    func count(_ sample: SampleBuffer) {
        switch sample {
        case .video: captured.add(1, ordering: .relaxed)
        case .audio(let audio): captured.add(audio.frameCount, ordering: .relaxed)
        }
    }

    /// The sound level of a microphone's audio, measured on the capture
    /// thread as the session takes it (see `CaptureConnection.audioChannels`);
    /// nil for a camera.
    public var audioLevelMeter: AudioLevelMeter? { mediaType == .audio ? meter : nil }
    private let meter = AudioLevelMeter()

    /// Measures an audio sample's level (on the capture thread).
    func meterLevels(of sample: SampleBuffer) {
        if case .audio(let audio) = sample { meter.measure(audio) }
    }

    /// Called by the session before it opens the input: a device input
    /// whose device has no chosen format captures at `preset` (nil: the
    /// device's default). Other inputs keep their source.
    func prepare(sessionPreset preset: SessionPreset?) {}

    var isOpened: Bool { lock.withLock { isOpen } }

    /// Opens the source (settling its format) unless that was done already.
    public func open() throws(CaptureError) {
        try lock.withLock { () throws(CaptureError) in
            guard !isOpen else { return }
            try source.open()
            isOpen = true
        }
    }

    /// Starts the source streaming once it is open (see `CaptureSource.startStreaming()`).
    func startStreaming() throws(CaptureError) {
        try source.startStreaming()
    }

    /// Closes the source (a session closes its inputs when it stops; this
    /// is for an input opened by hand, as `open()` does).
    public func close() {
        lock.withLock {
            if isOpen { source.close() }
            isOpen = false
        }
    }
}

/// A capture device as a session's input, like AVCaptureDeviceInput: its
/// source captures in the format chosen on the device (`activeFormat`,
/// `activeVideoMinFrameDuration`, under `lockForConfiguration()`), or the
/// device's default. Choose the format before making the input.
public final class CaptureDeviceInput: CaptureInput, @unchecked Sendable {
    // @unchecked: restated from CaptureInput; `device` is immutable.
    public let device: CaptureDevice
    /// What the source was made to capture (guarded as `source` is).
    private var request: CaptureVideoRequest

    /// An input for `device`. Throws when this process may not open it
    /// (`permissionDenied`, with how to get access) or it is gone. A file
    /// played as a camera (`virtual:file:PATH`) plays in real time.
    public init(device: CaptureDevice) throws(CaptureError) {
        if case .denied(let reason) = device.access { throw .device(.permissionDenied(device.path, reason: reason)) }
        self.device = device
        request = device.captureRequest(preset: nil)
        super.init(source: Self.makeSource(device, request: request))
    }

    private static func makeSource(_ device: CaptureDevice, request: CaptureVideoRequest) -> any CaptureSource {
        switch device.backend {
        case .virtual(let virtual):
            return virtual.makeSource(video: request, audio: CaptureAudioRequest(), realtime: true)
        case .v4l2:
            return V4L2CaptureSource(device: device, request: request)
        case .alsa:
            return ALSACaptureSource(device: device)
        }
    }

    /// The format chosen on the device wins; without one, the session's
    /// preset chooses, as in AVFoundation. The source is made again when
    /// that asks for something else than it was made for (a preset, or a
    /// format chosen on the device since).
    override func prepare(sessionPreset: SessionPreset?) {
        guard device.mediaType == .video, !isOpened else { return }
        let wanted = device.captureRequest(preset: sessionPreset)
        guard wanted != request else { return }
        request = wanted
        source = Self.makeSource(device, request: wanted)
    }
}
