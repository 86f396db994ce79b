/// The last stretch of a paused recording's media, kept in memory so that a
/// resume can write what came just before it: a pre-roll (a pre-record
/// buffer). Video comes compressed from the shared encoder the recording
/// takes its frames from (the ring is one more sink of that compression
/// stage, so nothing is encoded twice); audio comes raw from the recording's
/// writing thread, as it passes the samples it leaves out while paused, and
/// is encoded with the file on resume, so it is cut exactly where the video
/// begins.
///
/// The ring begins at a keyframe (it asks the stage for one when it is
/// armed) and drops whole stretches from keyframe to keyframe as newer ones
/// come: it holds at least `duration` once that much has passed, and at
/// most `duration` plus one keyframe interval, behind the frame the
/// recording's writing thread has reached (plus what the encoder made ahead
/// of it); a resume takes `duration` from its keyframe. Never more than
/// `memoryLimit` bytes: past it, the oldest stretch goes (counted).
///
/// Threads: the stage's thread hands in video, the writing thread arms it,
/// hands in audio and takes what it holds; all of it under `state`.
final class PreRollRing: CompressedVideoSink {
    /// How much media it keeps (at least, once that much has passed).
    let duration: MediaTime
    /// The most bytes of media it holds.
    let memoryLimit: Int
    private let state: Locked<State>
    /// The stage and input position of each video input it takes frames from.
    private let stages = Locked<[(stage: VideoCompressionStage, index: Int, input: CaptureInput)]>([])

    /// What it holds now, for statistics.
    struct Holding: Sendable, Hashable {
        /// Media time from its first keyframe to its latest sample.
        var duration: MediaTime = .zero
        var bytes = 0
        /// Video frames and audio sample frames let go to stay within `memoryLimit`, since the recording began.
        var droppedForMemory = 0
    }

    private struct State {
        /// Collecting (paused): only samples at or after `from` are kept.
        var armed = false
        var from = MediaTime.zero
        /// The latest frame the recording's writing thread has passed: the
        /// duration is kept behind it. The encoder hands frames to the ring
        /// before they reach the writing thread, so the ring's newest frame
        /// may be ahead of the resume point by the encoder's lag.
        var reach: MediaTime?
        /// Wants its next picture to be a keyframe (armed, empty, or emptied for memory).
        var wantsKeyframe = false
        var video: [(index: Int, sample: VideoSampleBuffer)] = []
        var audio: [(index: Int, sample: AudioSampleBuffer)] = []
        var bytes = 0
        var droppedForMemory = 0
        var hasVideo = false
    }

    /// The keyframe interval the ring asks its stage for when the settings
    /// name none: the longest it holds beyond its duration.
    static let defaultKeyframeInterval = MediaTime(value: 1, timescale: 1)

    init(duration: MediaTime, memoryLimit: Int, hasVideo: Bool) {
        self.duration = duration.nanoseconds
        self.memoryLimit = max(0, memoryLimit)
        var initial = State()
        initial.hasVideo = hasVideo
        state = Locked(initial)
    }

    /// Takes frames from `input`'s stage for `settings` (the one the
    /// recording joined, so the encoder is shared), with a keyframe at
    /// least every `keyframeInterval`.
    func join(_ input: CaptureInput, index: Int, settings: VideoOutputSettings, keyframeInterval: MediaTime,
              queueCapacity: Int) throws(WriterError) {
        let configuration = input.videoFormat?.codecConfiguration ?? []
        let stage = try input.compression.join(self, settings: settings, keyframeInterval: keyframeInterval,
                                               decodingConfiguration: configuration, queueCapacity: queueCapacity)
        stages.withLock { $0.append((stage, index, input)) }
    }

    /// Leaves every stage (the recording ended).
    func leaveAll() {
        let all = stages.withLock { stages in
            defer { stages = [] }
            return stages
        }
        for entry in all { entry.input.compression.leave(self, stage: entry.stage) }
    }

    // MARK: The writing thread

    /// The recording paused at `time`: from now on the ring keeps what
    /// comes at or after it, beginning at the next keyframe.
    func arm(from time: MediaTime) {
        state.withLock { state in
            state.armed = true
            state.from = time
            state.reach = nil
            state.wantsKeyframe = state.hasVideo
            Self.clear(&state)
        }
    }

    /// The paused recording's writing thread has come to the frame at `time`.
    func passed(videoAt time: MediaTime) {
        state.withLock { state in
            guard state.armed, state.reach.map({ time > $0 }) ?? true else { return }
            state.reach = time
            Self.trim(&state, duration: duration, memoryLimit: memoryLimit)
        }
    }

    /// Audio the paused recording leaves out: kept (a copy, so that a
    /// source's buffer pool is not held) while armed.
    func keep(_ audio: AudioSampleBuffer, index: Int) {
        guard state.withLock({ $0.armed }), audio.presentationTime + audio.duration > state.withLock({ $0.from }) else { return }
        let copy = AudioSampleBuffer(storage: SampleStorage(copying: audio.bytes), format: audio.format, channels: audio.channels,
                                     sampleRate: audio.sampleRate, frameCount: audio.frameCount, presentationTime: audio.presentationTime)
        state.withLock { state in
            guard state.armed, copy.presentationTime >= state.from else { return }
            state.audio.append((index, copy))
            state.bytes += copy.bytes.count
            Self.trim(&state, duration: duration, memoryLimit: memoryLimit)
        }
    }

    /// The recording resumes at `time`: what the ring holds from before it
    /// (video from its first keyframe on; audio from there on, or all of it
    /// without video), in time order, and the time the resumed stretch
    /// begins at (nil when it holds nothing). The ring is empty and idle
    /// until the next pause.
    ///
    /// All of its audio is returned, also what reaches past `time`: audio
    /// comes to the ring from the writing thread, which has passed it and
    /// will not see it again (held audio may run ahead of the encoded video
    /// by as much as the encoder lags), so leaving it out would open a gap.
    func take(before time: MediaTime) -> (start: MediaTime, samples: [(Int, SampleBuffer)])? {
        let (video, audio) = state.withLock { state in
            defer {
                state.armed = false
                state.wantsKeyframe = false
                Self.clear(&state)
            }
            var video = state.video.filter { $0.sample.presentationTime < time }
            // From the latest keyframe that leaves `duration` before the resume.
            if let keyframe = video.lastIndex(where: { $0.sample.isKeyframe && time - $0.sample.presentationTime >= duration }) {
                video.removeFirst(keyframe)
            }
            return (video, state.audio)
        }
        let start: MediaTime
        if let first = video.first?.sample.presentationTime {
            start = first
        } else if let first = audio.first?.sample.presentationTime {
            // Without video (an audio recording, or none came yet): the audio alone.
            guard !state.withLock({ $0.hasVideo }) else { return nil }
            start = first
        } else {
            return nil
        }
        var samples: [(Int, SampleBuffer)] = []
        samples.reserveCapacity(video.count + audio.count)
        var videoIndex = 0, audioIndex = 0
        while videoIndex < video.count || audioIndex < audio.count {
            let nextVideo = videoIndex < video.count ? video[videoIndex].sample.presentationTime : nil
            let nextAudio = audioIndex < audio.count ? audio[audioIndex].sample.presentationTime : nil
            if let v = nextVideo, nextAudio.map({ v <= $0 }) ?? true {
                samples.append((video[videoIndex].index, .video(video[videoIndex].sample)))
                videoIndex += 1
            } else {
                let entry = audio[audioIndex]
                audioIndex += 1
                // Audio wholly before the first frame is not part of the stretch.
                if entry.sample.presentationTime + entry.sample.duration <= start { continue }
                samples.append((entry.index, .audio(entry.sample)))
            }
        }
        return (start, samples)
    }

    /// What it holds now.
    var holding: Holding {
        state.withLock { state in
            let first = state.hasVideo ? state.video.first?.sample.presentationTime : state.audio.first?.sample.presentationTime
            let last = [state.video.last.map { $0.sample.presentationTime + ($0.sample.duration?.nanoseconds ?? .zero) },
                        state.audio.last.map { $0.sample.presentationTime + $0.sample.duration }].compactMap { $0 }.max()
            // What a resume now would take: up to the frame the recording has reached.
            let upTo = last.map { last in state.reach.map { min(last, $0) } ?? last }
            let held = first.flatMap { first in upTo.map { $0 > first ? $0 - first : .zero } } ?? .zero
            return Holding(duration: held, bytes: state.bytes, droppedForMemory: state.droppedForMemory)
        }
    }

    // MARK: CompressedVideoSink (the stage's thread)

    func compressionStage(_ stage: VideoCompressionStage, wantsKeyframeAt time: MediaTime) -> Bool {
        state.withLock { state in
            defer { state.wantsKeyframe = false }
            return state.armed && state.wantsKeyframe
        }
    }

    func compressionStage(_ stage: VideoCompressionStage, didEncode sample: VideoSampleBuffer) {
        guard let index = stages.withLock({ $0.first { $0.stage === stage }?.index }) else { return }
        keep(sample, index: index)
    }

    /// A compressed frame of input `index`, kept while armed (from a keyframe on).
    func keep(_ sample: VideoSampleBuffer, index: Int) {
        state.withLock { state in
            guard state.armed, sample.presentationTime >= state.from else { return }
            // A ring begins at a keyframe: frames before one could not be decoded.
            guard sample.isKeyframe || !state.video.isEmpty else {
                state.wantsKeyframe = true
                return
            }
            state.video.append((index, sample))
            state.bytes += sample.bytes.count
            Self.trim(&state, duration: duration, memoryLimit: memoryLimit)
        }
    }

    func compressionStage(_ stage: VideoCompressionStage, didFail error: WriterError) {
        // The recording hears the failure from its own sink; the ring keeps nothing more.
        state.withLock { state in
            state.armed = false
            Self.clear(&state)
        }
    }

    // MARK: Trimming

    private static func clear(_ state: inout State) {
        state.video = []
        state.audio = []
        state.bytes = 0
    }

    /// Drops the oldest stretches (keyframe to keyframe) that are no longer
    /// needed to hold `duration`, then any that pass `memoryLimit`; audio
    /// goes with the video it belongs to.
    private static func trim(_ state: inout State, duration: MediaTime, memoryLimit: Int) {
        if state.hasVideo {
            if let last = state.video.last?.sample.presentationTime {
                let newest = min(last, state.reach ?? last)
                // The latest keyframe that still leaves `duration` behind the newest frame the recording has passed.
                var cut = 0
                for position in state.video.indices.dropFirst() where state.video[position].sample.isKeyframe {
                    if newest - state.video[position].sample.presentationTime >= duration { cut = position } else { break }
                }
                dropVideo(&state, count: cut, forMemory: false)
            }
            while state.bytes > memoryLimit, !state.video.isEmpty {
                // The next keyframe after the first, or the whole ring when there is none.
                let next = state.video.indices.dropFirst().first { state.video[$0].sample.isKeyframe } ?? state.video.count
                dropVideo(&state, count: next, forMemory: true)
                if state.video.isEmpty { state.wantsKeyframe = true }
            }
            if let first = state.video.first?.sample.presentationTime {
                dropAudio(&state, forMemory: false) { $0.presentationTime + $0.duration <= first }
            }
            // Audio alone over the limit (no frame yet, or frames all dropped): oldest first.
            while state.bytes > memoryLimit, !state.audio.isEmpty { dropFirstAudio(&state, forMemory: true) }
            if state.video.isEmpty, !state.audio.isEmpty, let last = state.audio.last {
                let newest = last.sample.presentationTime + last.sample.duration
                dropAudio(&state, forMemory: false) { newest - $0.presentationTime > duration }
            }
        } else {
            if let last = state.audio.last {
                let newest = last.sample.presentationTime + last.sample.duration
                // Keep the buffer that reaches back to `duration` before the newest sample.
                while state.audio.count > 1, newest - state.audio[1].sample.presentationTime >= duration { dropFirstAudio(&state, forMemory: false) }
            }
            while state.bytes > memoryLimit, !state.audio.isEmpty { dropFirstAudio(&state, forMemory: true) }
        }
    }

    private static func dropVideo(_ state: inout State, count: Int, forMemory: Bool) {
        guard count > 0 else { return }
        for entry in state.video.prefix(count) { state.bytes -= entry.sample.bytes.count }
        state.video.removeFirst(count)
        if forMemory { state.droppedForMemory += count }
    }

    private static func dropAudio(_ state: inout State, forMemory: Bool, while condition: (AudioSampleBuffer) -> Bool) {
        while let first = state.audio.first, condition(first.sample) { dropFirstAudio(&state, forMemory: forMemory) }
    }

    private static func dropFirstAudio(_ state: inout State, forMemory: Bool) {
        let first = state.audio.removeFirst()
        state.bytes -= first.sample.bytes.count
        if forMemory { state.droppedForMemory += first.sample.frameCount }
    }
}
