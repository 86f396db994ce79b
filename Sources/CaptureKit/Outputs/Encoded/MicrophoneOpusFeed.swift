import CFFmpeg

/// One microphone's audio as Opus for an `EncodedMediaOutput`'s receivers:
/// encoded once, on a thread of its own, while anyone listens. Samples reach
/// it from the capture thread as copies through a bounded queue (a full queue
/// drops and counts them), so capture never waits on the encoder.
final class MicrophoneOpusFeed: Sendable {
    /// Opus's own rate: what WebRTC players expect.
    static let sampleRate = 48_000
    let microphone: CaptureInput
    let channels: Int
    private let queue = BoundedQueue<AudioSampleBuffer>(capacity: 50)
    private let receivers = Locked<[any EncodedMediaReceiver]>([])
    private let thread = Locked<CaptureThread?>(nil)
    /// Sample frames the queue refused.
    private let dropped = Locked(0)

    init(microphone: CaptureInput) {
        self.microphone = microphone
        channels = min(max(microphone.source.audioFormat?.channels ?? 1, 1), 2)
    }

    /// Opens the encoder and starts its thread.
    func start() throws(WriterError) {
        let settings = AudioOutputSettings(codec: .opus, sampleRate: Self.sampleRate, channels: channels, bitRate: 32_000 * channels)
        let encoder = try AudioEncoder(settings: settings, globalHeader: false)
        do {
            let started = try CaptureThread.start(name: "opus") { [self] in run(encoder) }
            thread.withLock { $0 = started }
        } catch {
            throw .invalidState("cannot start the audio encoder's thread: \(error)")
        }
    }

    /// Adds `receiver`; false once the feed has stopped.
    func add(_ receiver: any EncodedMediaReceiver) -> Bool {
        guard !queue.isClosed else { return false }
        receivers.withLock { $0.append(receiver) }
        return true
    }

    /// Removes `receiver`; true when none is left.
    func remove(_ receiver: any EncodedMediaReceiver) -> Bool {
        receivers.withLock { list in
            list.removeAll { $0 === receiver }
            return list.isEmpty
        }
    }

    /// Sample frames dropped before they were encoded.
    var droppedSampleFrames: Int { dropped.withLock { $0 } }

    /// From the capture thread.
    func capture(_ audio: AudioSampleBuffer) {
        if !queue.put(audio.copied()), !queue.isClosed { dropped.withLock { $0 += audio.frameCount } }
    }

    /// Stops the thread (waiting for it). Receivers are not told: the sound stops, the video
    /// they take goes on.
    func stop() {
        queue.close()
        thread.withLock { $0 }?.join()
    }

    // MARK: The feed's thread

    private func run(_ encoder: AudioEncoder) {
        var origin: Int64?
        let rate = Int64(Self.sampleRate)
        while let audio = queue.take() {
            guard let base = audio.bytes.baseAddress else { continue }
            let start = audio.presentationTime.nanoseconds.value
            let zero = origin ?? start
            origin = zero
            let time = av_rescale(start - zero, rate, 1_000_000_000)
            var planes = [UnsafePointer<UInt8>?](repeating: nil, count: 16)
            let bytesPerSample = audio.format.bytesPerSample
            if audio.format.isPlanar {
                for channel in 0..<min(audio.channels, 16) {
                    planes[channel] = (base + channel * audio.frameCount * bytesPerSample).assumingMemoryBound(to: UInt8.self)
                }
            } else {
                planes[0] = base.assumingMemoryBound(to: UInt8.self)
            }
            let listening = receivers.withLock { $0 }
            do throws(WriterError) {
                try planes.withUnsafeBufferPointer { pointer throws(WriterError) in
                    try encoder.append(planes: pointer.baseAddress!, count: Int32(audio.frameCount), format: audio.format.raw,
                                       rate: Int32(audio.sampleRate), channels: Int32(audio.channels), time: time) { packet in
                        guard let data = packet.pointee.data, packet.pointee.size > 0 else { return }
                        let bytes = UnsafeRawBufferPointer(start: data, count: Int(packet.pointee.size))
                        let captured = zero + av_rescale(packet.pointee.pts, 1_000_000_000, rate)
                        let duration = av_rescale(packet.pointee.duration, 1_000_000_000, rate)
                        for receiver in listening { receiver.receiveAudio(bytes, captureTime: captured, duration: duration) }
                    }
                }
            } catch {
                // A chunk the encoder refuses is lost to the listeners, as a dropped one is.
                dropped.withLock { $0 += audio.frameCount }
            }
        }
    }
}
