import Glibc
@testable import CaptureKit

/// An ALSA capture PCM whose device a test plays. The device captures
/// frames into a ring on a script; a pipe is readable while a period or
/// more waits (or an error does), so the capture loop's poll() sees it as it
/// sees a real PCM. Frames are interleaved S16, every channel of frame `n`
/// holding `n` (wrapping at 16 bits), so tests can see what was lost. The
/// device stamps frame `n` at `origin + n / rate` on CLOCK_MONOTONIC, as
/// snd_pcm_htimestamp reports it. Errors are alsa-lib's: an overrun answers
/// EPIPE, a vanished device ENODEV.
final class FakeMicrophone: ALSACapturePCM, @unchecked Sendable {
    // @unchecked: the device's state is behind `lock`; the configuration is set before it is opened.

    /// What the device does next. Each step waits until what the steps
    /// before it captured was read, so a script plays the same way on every run.
    enum Step {
        /// Captures this many frames into the ring.
        case frames(Int)
        /// The ring overflows: `lost` frames (a period or more) are captured
        /// and lost, and the next read answers -EPIPE (the state becomes XRUN).
        case overrun(lost: Int)
        /// As `overrun`, but poll() reports it (POLLERR, state XRUN) before any read does.
        case overrunSeenByPoll(lost: Int)
        /// The device goes away: calls answer -ENODEV, the state is DISCONNECTED.
        case disconnect
        /// A period is captured, but reading it answers this errno, negated,
        /// while the state still says RUNNING (a device gone before alsa-lib noticed).
        case failRead(Int32)
        /// Stops here until `play()` (at once if it was called already).
        case pause
    }

    var supportedFormats: [AudioSampleFormat] = [.s16]
    var channels: [Int] = [1, 2]
    var sampleRates: [Int] = [48000]
    /// Without device stamps, the capture loop falls back to the clock when it reads.
    var givesTimestamps = true

    private struct Device {
        var script: [Step]
        var stepIndex = 0
        var paused = false
        /// `play()` calls not yet used up by a `.pause`.
        var plays = 0
        var state = ALSAPCMState.open
        var settings: ALSACaptureSettings?
        /// Frames captured since the start, and frames read (or dropped by prepare).
        var captured = 0
        var readPosition = 0
        /// An overrun the next read reports.
        var pendingOverrun = false
        /// What every read answers from now.
        var readFailure: Int32?
        var origin: Int64 = 0
        var calls: [String] = []
        var closed = false
    }

    private let lock: Locked<Device>
    private let readEnd: Int32
    private let writeEnd: Int32

    init(script: [Step] = []) throws {
        lock = Locked(Device(script: script))
        (readEnd, writeEnd) = try Posix.nonBlockingPipe()
    }

    deinit {
        try? Posix.close(readEnd)
        try? Posix.close(writeEnd)
    }

    // MARK: What a test reads

    /// The alsa-lib calls made, by name (`snd_pcm_readi` …), in order.
    var calls: [String] { lock.withLock { $0.calls } }
    var settings: ALSACaptureSettings? { lock.withLock { $0.settings } }
    var isClosed: Bool { lock.withLock { $0.closed } }
    var isScriptDone: Bool { lock.withLock { $0.stepIndex >= $0.script.count && $0.captured == $0.readPosition } }

    /// snd_pcm_open: a fresh handle on the device, which goes on where it was.
    func open() {
        lock.withLock { device in
            device.calls.append("snd_pcm_open")
            device.closed = false
            if device.state != .disconnected { device.state = .open }
        }
    }

    /// Goes on after a `.pause`, or lets the next `.pause` pass.
    func play() {
        lock.withLock { device in
            if device.paused { device.paused = false } else { device.plays += 1 }
            pump(&device)
        }
    }

    /// The sample every channel of frame `number` holds.
    static func sample(_ number: Int) -> Int16 { Int16(truncatingIfNeeded: number) }

    // MARK: The device

    /// Frames waiting in the ring (the most it holds, after an overflow).
    private static func available(_ device: Device) -> Int {
        min(device.captured - device.readPosition, device.settings?.bufferFrames ?? 0)
    }

    private func pump(_ device: inout Device) {
        while device.state == .running, !device.paused, device.stepIndex < device.script.count,
              device.captured == device.readPosition, !device.pendingOverrun {
            let step = device.script[device.stepIndex]
            device.stepIndex += 1
            switch step {
            case .frames(let count):
                device.captured += count
            case .overrun(let lost):
                device.captured += lost
                device.pendingOverrun = true
            case .overrunSeenByPoll(let lost):
                device.captured += lost
                device.state = .xrun
            case .disconnect:
                device.state = .disconnected
            case .failRead(let code):
                device.captured += device.settings?.periodFrames ?? 1
                device.readFailure = code
            case .pause:
                if device.plays > 0 { device.plays -= 1 } else { device.paused = true }
            }
        }
        updatePipe(&device)
    }

    /// Readable while poll() has something to say.
    private func updatePipe(_ device: inout Device) {
        let period = device.settings?.periodFrames ?? 1
        let ready = device.state == .xrun || device.state == .disconnected || device.pendingOverrun
            || (device.state == .running && Self.available(device) >= period)
        drain()
        if ready {
            _ = try? Posix.write(writeEnd, [1])
        }
    }

    private func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while let count = try? Posix.read(readEnd, into: &bytes), count > 0 {}
    }

    private func call<T>(_ name: String, _ body: (inout Device) throws(SystemCallError) -> T) throws(SystemCallError) -> T {
        try lock.withLock { (device) throws(SystemCallError) -> T in
            device.calls.append(name)
            guard !device.closed else { throw SystemCallError(call: name, errno: EBADF) }
            if device.state == .disconnected, name != "snd_pcm_state" { throw SystemCallError(call: name, errno: ENODEV) }
            return try body(&device)
        }
    }

    private func nanoseconds(frames: Int, rate: Int) -> Int64 { Int64(frames) * 1_000_000_000 / Int64(rate) }

    // MARK: ALSACapturePCM

    func supports(_ format: AudioSampleFormat) -> Bool { supportedFormats.contains(format) }

    func configure(_ request: ALSACaptureConfiguration) throws(SystemCallError) -> ALSACaptureSettings {
        let (channels, rates) = (self.channels, sampleRates)
        return try call("snd_pcm_hw_params") { (device) throws(SystemCallError) -> ALSACaptureSettings in
            guard request.sampleFormat == .s16 else { throw SystemCallError(call: "snd_pcm_hw_params_set_format", errno: EINVAL) }
            let channelCount = channels.min { abs($0 - request.channels) < abs($1 - request.channels) } ?? 1
            let rate = rates.min { abs($0 - request.sampleRate) < abs($1 - request.sampleRate) } ?? 48000
            let period = max(1, rate * Int(request.periodMicroseconds) / 1_000_000)
            let buffer = max(period, rate * Int(request.bufferMicroseconds) / 1_000_000)
            let settings = ALSACaptureSettings(channels: channelCount, sampleRate: rate, periodFrames: period, bufferFrames: buffer)
            device.settings = settings
            device.state = .prepared
            return settings
        }
    }

    func pollDescriptors() throws(SystemCallError) -> [pollfd] {
        let fd = readEnd
        return try call("snd_pcm_poll_descriptors") { _ in [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)] }
    }

    func events(_ descriptors: [pollfd]) throws(SystemCallError) -> Int16 {
        try call("snd_pcm_poll_descriptors_revents") { (device) -> Int16 in
            guard descriptors.first?.revents ?? 0 != 0 else { return 0 }
            if device.state == .xrun { return Int16(POLLERR) }
            return Int16(POLLIN)
        }
    }

    var state: ALSAPCMState { lock.withLock { $0.closed ? .disconnected : $0.state } }

    func prepare() throws(SystemCallError) {
        try call("snd_pcm_prepare") { device in
            // The ring is emptied: what was in it is lost.
            device.readPosition = device.captured
            device.pendingOverrun = false
            device.state = .prepared
            updatePipe(&device)
        }
    }

    func start() throws(SystemCallError) {
        try call("snd_pcm_start") { (device) throws(SystemCallError) in
            guard device.state == .prepared, device.settings != nil else {
                throw SystemCallError(call: "snd_pcm_start", errno: EBADFD)
            }
            if device.origin == 0 {
                // Frame 0 was captured a little before now, so stamps stay in the past.
                device.origin = MonotonicClock.nowNanoseconds() - 1_000_000_000
            }
            device.state = .running
            pump(&device)
        }
    }

    func resume() throws(SystemCallError) {
        // No suspend is ever scripted: resuming is not possible.
        try call("snd_pcm_resume") { (_) throws(SystemCallError) in throw SystemCallError(call: "snd_pcm_resume", errno: ENOSYS) }
    }

    func drop() {
        _ = try? call("snd_pcm_drop") { device in
            device.state = .setup
            updatePipe(&device)
        }
    }

    func availableFrames() throws(SystemCallError) -> Int {
        try call("snd_pcm_avail_update") { (device) throws(SystemCallError) -> Int in
            if device.state == .xrun { throw SystemCallError(call: "snd_pcm_avail_update", errno: EPIPE) }
            return Self.available(device)
        }
    }

    func timestamp() -> ALSATimestamp? {
        guard givesTimestamps else { return nil }
        return try? call("snd_pcm_htimestamp") { (device) -> ALSATimestamp? in
            guard let rate = device.settings?.sampleRate, device.state == .running else { return nil }
            return ALSATimestamp(available: Self.available(device),
                                 nanoseconds: device.origin + nanoseconds(frames: device.captured, rate: rate))
        } ?? nil
    }

    func delay() -> Int? {
        try? call("snd_pcm_delay") { device in Self.available(device) }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, frames: Int) throws(SystemCallError) -> Int {
        try call("snd_pcm_readi") { (device) throws(SystemCallError) -> Int in
            if let code = device.readFailure { throw SystemCallError(call: "snd_pcm_readi", errno: code) }
            if device.pendingOverrun || device.state == .xrun {
                device.pendingOverrun = false
                device.state = .xrun
                throw SystemCallError(call: "snd_pcm_readi", errno: EPIPE)
            }
            guard device.state == .running, let settings = device.settings else {
                throw SystemCallError(call: "snd_pcm_readi", errno: EBADFD)
            }
            let count = min(frames, Self.available(device), buffer.count / (2 * settings.channels))
            guard count > 0 else { throw SystemCallError(call: "snd_pcm_readi", errno: EAGAIN) }
            let samples = buffer.bindMemory(to: Int16.self)
            for frame in 0..<count {
                for channel in 0..<settings.channels {
                    samples[frame * settings.channels + channel] = Self.sample(device.readPosition + frame)
                }
            }
            device.readPosition += count
            pump(&device)
            return count
        }
    }

    func close() {
        lock.withLock { device in
            device.calls.append("snd_pcm_close")
            device.closed = true
        }
    }
}
