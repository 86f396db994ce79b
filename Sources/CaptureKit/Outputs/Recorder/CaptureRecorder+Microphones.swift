/// What a recording keeps of each microphone: a reader of its levels
/// between progress reports and, when asked for, a silence monitor.
struct MicrophoneWatch: Sendable {
    /// Its number, from 1, among the session's microphones.
    let number: Int
    let input: CaptureInput
    let reader: AudioLevelReader
    var silence: AudioSilenceMonitor?
}

extension CaptureRecorder {
    /// The session's microphones, as the recording numbers them (from 1).
    package var microphones: [CaptureInput] { state.withLock { $0.microphones.map(\.input) } }

    /// Each microphone's levels since the last call (the first: since the
    /// recording started), beginning a new interval: what a progress report shows.
    package func readAudioLevels() -> [CaptureRecorderAudioLevels] {
        state.withLock { $0.microphones }.map { watch in
            CaptureRecorderAudioLevels(microphone: watch.number, input: watch.input, levels: watch.reader.read())
        }
    }

    /// Each microphone's levels of the present interval so far, without
    /// beginning a new one (for a status asked for between reports).
    package var currentAudioLevels: [CaptureRecorderAudioLevels] {
        state.withLock { $0.microphones }.map { watch in
            CaptureRecorderAudioLevels(microphone: watch.number, input: watch.input, levels: watch.reader.current)
        }
    }

    /// Begins reading each microphone's levels and, with a silence
    /// configuration, watching it; refuses silence detection without a microphone.
    func watchMicrophones(_ inputs: [CaptureInput]) throws(CaptureRecorderError) {
        if configuration.silence != nil && inputs.isEmpty { throw .recording(.silenceNeedsMicrophone) }
        var watches: [MicrophoneWatch] = []
        for (index, input) in inputs.enumerated() {
            guard let meter = input.audioLevelMeter else { continue }
            var watch = MicrophoneWatch(number: index + 1, input: input, reader: meter.makeReader())
            if let silence = configuration.silence {
                let number = watch.number
                watch.silence = meter.monitorSilence(silence, queue: microphoneQueue) { [weak self, weak input] event in
                    guard let self, let input, !self.hasEnded, let delegate = self.state.withLock({ $0.delegate }) else { return }
                    delegate.recorder(self, microphone: number, input: input, silence: event)
                }
            }
            watches.append(watch)
        }
        state.withLock { $0.microphones = watches }
    }

    /// The recording has ended: no more silence events (the levels stay readable until `finish()`).
    func stopWatchingForSilence() {
        state.withLock { state in
            for index in state.microphones.indices { state.microphones[index].silence = nil }
        }
    }
}
