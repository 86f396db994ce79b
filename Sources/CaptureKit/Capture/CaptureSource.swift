import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Something a capture session takes samples from: a V4L2 camera, an ALSA
/// microphone, or a virtual device (test pattern, test tone, a file played
/// as a camera). The session opens it, then runs its capture loop on a
/// thread of its own; the loop hands each sample to `deliver` and never
/// waits on what the outputs do with it.
package protocol CaptureSource: AnyObject, Sendable {
    /// What the source captures.
    var mediaType: MediaType { get }
    /// The device's path or name as the user gave it (`/dev/video0`, `hw:Loopback,1`, `test-pattern`).
    var path: String { get }
    /// The device's name (card name), for messages and file metadata.
    var localizedName: String { get }
    /// The device's model, for file metadata (USB vendor:product, driver), when known.
    var modelID: String? { get }
    /// The device's unique ID, stable across replug (`CaptureDevice.uniqueID`);
    /// the path as given for sources that have none.
    var uniqueID: String { get }

    /// The format frames come in, once `open()` has returned (video sources).
    var videoFormat: CaptureVideoFormat? { get }
    /// The format audio comes in, once `open()` has returned (audio sources).
    var audioFormat: CaptureAudioFormat? { get }

    /// Opens the device and settles its format: what was asked for, checked
    /// against what the device really offers. Throws a `CaptureError` that
    /// names the device and, for an impossible request, the nearest choice.
    func open() throws(CaptureError)

    /// Starts the device streaming, after `open()` and before `run`, so that
    /// a device that cannot stream next to the others (a USB bus out of
    /// bandwidth) is refused before any output is created. Sources that
    /// have nothing to start do nothing; `run` starts streaming otherwise.
    func startStreaming() throws(CaptureError)

    /// The capture loop, run on the session's capture thread: starts
    /// streaming, hands every sample to `deliver` in capture order, and
    /// returns how it ended once `stop` is signalled, the input ends, or the
    /// device fails. Blocks in poll() between samples, with `stop.descriptor`
    /// among the descriptors it waits on.
    func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd

    /// Samples the device itself lost so far (kernel sequence gaps, ALSA overruns).
    var droppedByDevice: Int { get }

    /// When the device lost them, so that an output counts only the losses
    /// inside what it recorded; nil for a source that keeps no such log,
    /// whose outputs count every loss while they record (the default).
    var lossLog: SampleLossLog? { get }

    /// How many of its samples an output may gather before its thread is
    /// woken to write them. A device delivering in real time wants each
    /// sample taken at once (1, the default). A source that delivers as fast
    /// as it can (a file played with `realtime` off) may say more: the
    /// output's thread then wakes once for a run of samples, not twice per
    /// sample. Must not exceed half of what the source lets out at once, so
    /// that a source waiting for its samples to come back never waits on a
    /// thread nobody woke. Read once, after `open()`.
    var samplesPerWakeup: Int { get }

    /// Releases the device. Safe to call more than once.
    func close()
}

extension CaptureSource {
    package var samplesPerWakeup: Int { 1 }
    package var uniqueID: String { path }
    package var lossLog: SampleLossLog? { nil }
    package func startStreaming() throws(CaptureError) {}
}

/// How a capture loop ended.
public enum CaptureEnd: Sendable, Equatable {
    /// The stop signal was raised.
    case stopped
    /// A source with an end (a file) reached it.
    case endOfInput
    /// The device went away (unplugged, disconnected): ENODEV and the like.
    case deviceLost(String)
    /// Capture failed for another reason.
    case failed(CaptureError)
}

/// What a video source is asked for. Every field is optional: nil leaves
/// the choice to the source (the device's current or best format).
public struct CaptureVideoRequest: Sendable, Hashable {
    public var preset: SessionPreset?
    public var width: Int?
    public var height: Int?
    /// Frames per second.
    public var framesPerSecond: Double?
    /// A V4L2 fourcc (`YUYV`, `MJPG`, `H264`) or, for virtual sources, a pixel format name.
    public var pixelFormat: String?
    /// Open the device through libv4l2 (its conversions become available).
    public var useLibv4l2: Bool

    public init(preset: SessionPreset? = nil, width: Int? = nil, height: Int? = nil, framesPerSecond: Double? = nil,
                pixelFormat: String? = nil, useLibv4l2: Bool = false) {
        self.preset = preset
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.pixelFormat = pixelFormat
        self.useLibv4l2 = useLibv4l2
    }
}

/// What an audio source is asked for; nil lets the device choose.
public struct CaptureAudioRequest: Sendable, Hashable {
    public var sampleRate: Int?
    public var channels: Int?

    public init(sampleRate: Int? = nil, channels: Int? = nil) {
        self.sampleRate = sampleRate
        self.channels = channels
    }
}

/// The format a video source delivers after `open()`.
public struct CaptureVideoFormat: Sendable, Hashable {
    public var layout: VideoSampleLayout
    public var width: Int
    public var height: Int
    /// Time per frame, when the device says.
    public var frameDuration: MediaTime?
    /// The V4L2 fourcc, or a short name for virtual sources.
    public var fourcc: String
    /// What compressed frames need to be decoded and that they do not carry:
    /// the codec configuration a file keeps out of band (an avcC or hvcC
    /// record for H.264/HEVC from MP4 or Matroska, whose frames are then
    /// length-prefixed). Empty for a camera, whose frames carry it in band.
    public var codecConfiguration: [UInt8]

    public init(layout: VideoSampleLayout, width: Int, height: Int, frameDuration: MediaTime?, fourcc: String,
                codecConfiguration: [UInt8] = []) {
        self.layout = layout
        self.width = width
        self.height = height
        self.frameDuration = frameDuration
        self.fourcc = fourcc
        self.codecConfiguration = codecConfiguration
    }
}

/// The format an audio source delivers after `open()`.
public struct CaptureAudioFormat: Sendable, Hashable {
    public var sampleFormat: AudioSampleFormat
    public var sampleRate: Int
    public var channels: Int

    public init(sampleFormat: AudioSampleFormat, sampleRate: Int, channels: Int) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
    }
}

/// Why capture could not start or go on. Each case names the device.
public enum CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Finding or opening the device failed.
    case device(DeviceError)
    /// The request cannot be met by this device; the reason names the nearest supported choice.
    case unsupported(String, reason: String)
    /// A system call on the device failed.
    case io(String, SystemCallError)
    /// The device went away.
    case deviceLost(String)
    /// Decoding or reading a source file failed.
    case source(String, reason: String)
    /// Another process holds the camera's configuration lock.
    case configurationLocked(String, holder: ConfigurationLockHolder)
    /// The camera cannot stream beside the others: its bus has no bandwidth
    /// left for it (VIDIOC_STREAMON answered ENOSPC).
    case noBandwidth(String)
    /// The session has two inputs for one camera (`uniqueID`): a camera
    /// streams to one reader.
    case sameCameraTwice(String, uniqueID: String)
    /// The input's `videoFrameProcessor` cannot change frames in the format
    /// the camera delivers (`fourcc`, such as MJPG): a compressed format, or
    /// one it cannot draw on.
    case processorCannotTake(String, fourcc: String)

    public var description: String {
        switch self {
        case .device(let error): return error.description
        case .unsupported(let device, let reason): return "\(device): \(reason)"
        case .io(let device, let error): return "\(device): \(error)"
        case .deviceLost(let device): return "\(device): the device went away"
        case .source(let device, let reason): return "\(device): \(reason)"
        case .configurationLocked(let device, let holder): return "\(device): locked for configuration by \(holder)"
        case .sameCameraTwice(let device, let uniqueID): return "\(device) (\(uniqueID)) is an input twice; a camera streams to one reader"
        case .processorCannotTake(let device, let fourcc): return "\(device): its frame processor cannot change \(fourcc) frames"
        case .noBandwidth(let device): return "\(device): cannot stream beside the other cameras: its bus has no bandwidth left (VIDIOC_STREAMON: no space left on device)"
        }
    }
}

/// The signal that ends a capture loop: a pipe whose read end the loop
/// polls along with its device, so stopping wakes it at once.
package final class CaptureStopSignal: Sendable {
    /// The descriptor to include in poll(); readable once stopping was requested.
    package var descriptor: Int32 { pipe.readEnd }
    private let pipe = WakeupPipe()
    private let flag = AtomicFlag()

    package init() {}

    deinit { pipe.close() }

    /// Whether stopping was requested.
    package var isRaised: Bool { flag.value }

    /// Requests the loop to stop; safe from any thread (not from a signal
    /// handler), and more than once.
    package func raise() {
        guard flag.setIfClear() else { return }
        pipe.wake()
    }

    /// Waits until `deadline` (CLOCK_MONOTONIC nanoseconds) or until stopping
    /// is requested; returns true if it was requested. For sources that pace
    /// themselves (test pattern, real-time file playback).
    package func wait(untilNanoseconds deadline: Int64) -> Bool {
        while !isRaised {
            let remaining = deadline - MonotonicClock.nowNanoseconds()
            if remaining <= 0 { return false }
            var entries = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
            let millis = Int32(min((remaining + 999_999) / 1_000_000, Int64(Int32.max)))
            _ = try? Posix.poll(&entries, timeout: millis)
        }
        return true
    }
}

extension CaptureStopSignal {
    /// Waits in poll() until stopping is requested or `descriptor` is
    /// readable: for a source waiting on its consumers, such as for a lent
    /// buffer to come back (the wakeup pipe it is returned through).
    func waitUntilRaised(orReadable descriptor: Int32) {
        var entries = [pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        _ = try? Posix.poll(&entries, timeout: -1)
    }
}

/// A boolean that threads set and read without a data race.
final class AtomicFlag: Sendable {
    private let state = Atomic<Bool>(false)

    init() {}

    var value: Bool { state.load(ordering: .acquiring) }

    /// Sets the flag; returns false if it was already set.
    func setIfClear() -> Bool {
        state.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}
