import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// An open libavcodec audio encoder with a resampler and a FIFO in front of
/// it: samples in any layout, rate and channel count are converted to the
/// encoder's, regrouped into frames of the encoder's size, and stamped with
/// a sample-exact running time.
final class AudioEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let encoderName: String
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let fifo: OpaquePointer
    private var resampler: OpaquePointer?
    private var resamplerInput: (format: AVSampleFormat, rate: Int32, channels: Int32)?
    private var converted: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?
    private var convertedCapacity: Int32 = 0
    /// Samples per encoded frame.
    let frameSize: Int32
    /// The time (in samples at the encoder's rate) of the first sample in the FIFO.
    private var fifoTime: Int64?
    /// Whether the resampler is stretching or squeezing the audio to close
    /// a drift between the samples and their time stamps.
    private var compensating = false
    /// Sample frames queued for encoding so far (at the encoder's rate):
    /// what the track holds once flushed, the resampler's stretching and
    /// squeezing included, and of them the silence put in.
    private(set) var samplesQueued: Int64 = 0
    private(set) var silenceQueued: Int64 = 0

    var sampleRate: Int32 { context.pointee.sample_rate }

    init(settings: AudioOutputSettings, globalHeader: Bool) throws(WriterError) {
        guard settings.sampleRate > 0, settings.sampleRate <= 768_000 else { throw .invalidSettings("sample rate \(settings.sampleRate) Hz is out of range") }
        guard settings.channels > 0, settings.channels <= 16 else { throw .invalidSettings("\(settings.channels) channels is out of range") }
        FFmpegLogging.configure()
        guard let (name, codec) = EncoderCatalog.firstEncoder(settings.codec.encoderNames) else {
            throw .encoderNotFound(codec: settings.codec.name, tried: settings.codec.encoderNames)
        }
        if var rates = codec.pointee.supported_samplerates {
            var list = [Int32]()
            while rates.pointee != 0 { list.append(rates.pointee); rates += 1 }
            guard list.contains(Int32(settings.sampleRate)) else {
                throw .invalidSettings("\(name) does not take \(settings.sampleRate) Hz; it takes \(list.map(String.init).joined(separator: ", "))")
            }
        }
        var formats = [AVSampleFormat]()
        if var list = codec.pointee.sample_fmts {
            while list.pointee != AV_SAMPLE_FMT_NONE { formats.append(list.pointee); list += 1 }
        }
        guard let format = formats.first else { throw .invalidSettings("\(name) names no sample format") }
        guard let context = avcodec_alloc_context3(codec) else { throw .ffmpeg(FFmpegError(call: "avcodec_alloc_context3", code: cffmpeg_averror(ENOMEM))) }
        var contextPointer: UnsafeMutablePointer<AVCodecContext>? = context
        context.pointee.sample_fmt = format
        context.pointee.sample_rate = Int32(settings.sampleRate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
        av_channel_layout_default(&context.pointee.ch_layout, Int32(settings.channels))
        if let bitRate = settings.bitRate {
            guard bitRate > 0 else { avcodec_free_context(&contextPointer); throw .invalidSettings("bit rate must be positive") }
            context.pointee.bit_rate = Int64(bitRate)
        }
        if globalHeader { context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER) }
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        for (key, value) in settings.encoderOptions.sorted(by: { $0.key < $1.key }) { av_dict_set(&options, key, value, 0) }
        let opened = avcodec_open2(context, codec, &options)
        if opened < 0 {
            avcodec_free_context(&contextPointer)
            throw .invalidSettings("\(name) refused the settings (\(FFmpegError(call: "avcodec_open2", code: opened).reason))")
        }
        if let unused = av_dict_get(options, "", nil, AV_DICT_IGNORE_SUFFIX) {
            let key = String(cString: unused.pointee.key)
            avcodec_free_context(&contextPointer)
            throw .invalidSettings("\(name) has no option '\(key)'")
        }
        let variable = codec.pointee.capabilities & Int32(AV_CODEC_CAP_VARIABLE_FRAME_SIZE) != 0
        frameSize = context.pointee.frame_size > 0 && !variable ? context.pointee.frame_size : 1024
        guard let frame = av_frame_alloc(), let packet = av_packet_alloc(),
              let fifo = av_audio_fifo_alloc(format, Int32(settings.channels), frameSize * 4) else {
            avcodec_free_context(&contextPointer)
            throw .ffmpeg(FFmpegError(call: "av_audio_fifo_alloc", code: cffmpeg_averror(ENOMEM)))
        }
        frame.pointee.format = format.rawValue
        frame.pointee.sample_rate = context.pointee.sample_rate
        frame.pointee.nb_samples = frameSize
        av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
        if av_frame_get_buffer(frame, 0) < 0 {
            avcodec_free_context(&contextPointer)
            throw .ffmpeg(FFmpegError(call: "av_frame_get_buffer", code: cffmpeg_averror(ENOMEM)))
        }
        self.context = context
        self.encoderName = name
        self.frame = frame
        self.packet = packet
        self.fifo = fifo
    }

    deinit {
        var contextPointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&contextPointer)
        var framePointer: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&framePointer)
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packetPointer)
        av_audio_fifo_free(fifo)
        swr_free(&resampler)
        if converted != nil { av_freep(&converted![0]) }
        av_freep(&converted)
    }

    /// Converts and queues `count` samples per channel starting at `time`
    /// (in samples at the encoder's rate), and encodes every full frame.
    ///
    /// Samples are laid end to end, and their time stamps keep them there:
    /// a device's sample clock runs a little fast or slow against the
    /// capture clock, so over a long recording the count of samples and the
    /// stamps part. Once they are more than 10 ms apart, the resampler
    /// stretches or squeezes the audio by at most 0.1 % (inaudible) until
    /// they agree again. A jump of more than a frame forward (samples lost:
    /// a device's overrun, a process stopped or starved) is filled with
    /// silence, however long, so the track stays one unbroken run that
    /// every reader, those of containers without time stamps (WAV) too,
    /// decodes to the same length as its time stamps say; the silence is
    /// in the file and returned as such. (Sessions lie end to end on the
    /// file's timeline, so a pause opens no jump.) One backward drops the
    /// samples already laid down. `planes` holds 16 pointers, nil past the
    /// input's planes. What it queued, silence included, is counted in
    /// `samplesQueued` and `silenceQueued`.
    func append(planes: UnsafePointer<UnsafePointer<UInt8>?>, count: Int32, format: AVSampleFormat, rate: Int32, channels: Int32,
                time: Int64, sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        try prepareResampler(format: format, rate: rate, channels: channels, sink: sink)
        var time = time
        var skip: Int32 = 0
        if let next = nextInputTime {
            let drift = time - next
            let jump = Int64(frameSize)
            if drift > jump {
                try drainResampler()
                // Where the resampler's last samples ended up: the silence starts there.
                if let after = nextInputTime, time > after { try queueSilence(time - after, sink: sink) }
                try compensate(drift: 0)
            } else if drift < -jump {
                // These samples' start is already in the file: keep the rest.
                let drop = av_rescale_rnd(-drift, Int64(rate), Int64(sampleRate), AV_ROUND_UP)
                if drop >= Int64(count) { return }
                skip = Int32(drop)
                time = next
            } else {
                try compensate(drift: drift)
            }
        }
        if fifoTime == nil { fifoTime = time }
        if skip == 0 {
            try convert(planes: planes, count: count)
        } else {
            // Rare (a device's stamps stepping back): the planes moved past the dropped samples.
            let bytesPerSample = Int(av_get_bytes_per_sample(format))
            let step = Int(skip) * bytesPerSample * (av_sample_fmt_is_planar(format) != 0 ? 1 : Int(channels))
            let shifted = (0..<16).map { planes[$0].map { $0 + step } }
            try shifted.withUnsafeBufferPointer { pointer throws(WriterError) in try convert(planes: pointer.baseAddress!, count: count - skip) }
        }
        try encodeQueued(final: false, sink: sink)
    }

    /// Fills what is missing before `time` (in samples at the encoder's
    /// rate) with silence, when that is more than a frame: the end of a
    /// session whose last samples were lost.
    func fillSilence(until time: Int64, sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        try drainResampler()
        guard let next = nextInputTime, time - next > Int64(frameSize) else { return }
        try queueSilence(time - next, sink: sink)
    }

    /// Before the first samples: starts the track at `start` (in samples at
    /// the encoder's rate) with silence up to `time`, where the first
    /// samples go, when that is more than a frame. Returns whether it did.
    func fillSilence(from start: Int64, until time: Int64, sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) -> Bool {
        guard fifoTime == nil, time - start > Int64(frameSize) else { return false }
        fifoTime = start
        try queueSilence(time - start, sink: sink)
        return true
    }

    /// Queues `count` samples of silence: what a device lost, or a gap its
    /// slow clock opened, plays as silence and the audio after it stays in
    /// place in every container, those without time stamps (WAV) too.
    /// Encoded a few frames at a time, so a long gap (minutes of a
    /// microphone gone quiet) takes no more memory than a short one.
    private func queueSilence(_ count: Int64, sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        var remaining = count
        let piece = frameSize * 4
        try ensureCapacity(piece)
        let channels = context.pointee.ch_layout.nb_channels
        av_samples_set_silence(converted, 0, piece, channels, context.pointee.sample_fmt)
        while remaining > 0 {
            let take = Int32(min(remaining, Int64(piece)))
            let written = converted!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) { av_audio_fifo_write(fifo, $0, take) }
            guard written >= take else { throw .ffmpeg(FFmpegError(call: "av_audio_fifo_write", code: written < 0 ? written : cffmpeg_averror(ENOMEM))) }
            remaining -= Int64(take)
            samplesQueued += Int64(take)
            silenceQueued += Int64(take)
            try encodeQueued(final: false, sink: sink)
        }
    }

    /// Where the next input sample will be laid (in samples at the
    /// encoder's rate): after what is queued and what the resampler holds.
    private var nextInputTime: Int64? {
        guard let fifoTime else { return nil }
        let held = resampler.map { swr_get_delay($0, Int64(sampleRate)) } ?? 0
        return fifoTime + Int64(av_audio_fifo_size(fifo)) + held
    }

    /// Starts, retunes or ends the resampler's compensation for `drift`
    /// samples (positive: the stamps are ahead of the samples, so samples
    /// are added).
    private func compensate(drift: Int64) throws(WriterError) {
        guard let resampler else { return }
        let tolerance = min(Int64(sampleRate) / 100, Int64(frameSize) / 2)
        if abs(drift) <= tolerance {
            guard compensating else { return }
            compensating = false
            let status = swr_set_compensation(resampler, 0, 0)
            guard status >= 0 else { throw .ffmpeg(FFmpegError(call: "swr_set_compensation", code: status)) }
            return
        }
        // Spread over 1000 times as many samples: a 0.1 % change of speed.
        let delta = Int32(clamping: drift)
        let distance = Int32(clamping: abs(drift) * 1000)
        let status = swr_set_compensation(resampler, delta, distance)
        guard status >= 0 else { throw .ffmpeg(FFmpegError(call: "swr_set_compensation", code: status)) }
        compensating = true
    }

    /// Encodes whatever is queued and drains the encoder.
    func flush(sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        try drainResampler()
        try encodeQueued(final: true, sink: sink)
        let status = avcodec_send_frame(context, nil)
        if status < 0 && status != cffmpeg_AVERROR_EOF {
            throw .ffmpeg(FFmpegError(call: "avcodec_send_frame(\(encoderName))", code: status))
        }
        try drain(sink)
    }

    private func prepareResampler(format: AVSampleFormat, rate: Int32, channels: Int32,
                                  sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        if let current = resamplerInput, current.format == format, current.rate == rate, current.channels == channels, resampler != nil { return }
        if resampler != nil {
            // The input changed shape: let the old converter empty out first.
            try drainResampler()
            swr_free(&resampler)
        }
        var inputLayout = AVChannelLayout()
        av_channel_layout_default(&inputLayout, channels)
        defer { av_channel_layout_uninit(&inputLayout) }
        var created: OpaquePointer?
        let status = swr_alloc_set_opts2(&created, &context.pointee.ch_layout, context.pointee.sample_fmt, context.pointee.sample_rate,
                                         &inputLayout, format, rate, 0, nil)
        guard status >= 0, created != nil else { throw .ffmpeg(FFmpegError(call: "swr_alloc_set_opts2", code: status)) }
        let initialized = swr_init(created)
        guard initialized >= 0 else {
            swr_free(&created)
            throw .invalidSettings("cannot convert \(channels)-channel audio at \(rate) Hz (\(FFmpegError(call: "swr_init", code: initialized).reason))")
        }
        resampler = created
        resamplerInput = (format, rate, channels)
        compensating = false
    }

    private func ensureCapacity(_ samples: Int32) throws(WriterError) {
        guard samples > convertedCapacity else { return }
        if converted != nil { av_freep(&converted![0]) }
        av_freep(&converted)
        let channels = context.pointee.ch_layout.nb_channels
        let status = av_samples_alloc_array_and_samples(&converted, nil, channels, samples, context.pointee.sample_fmt, 0)
        guard status >= 0 else { convertedCapacity = 0; throw .ffmpeg(FFmpegError(call: "av_samples_alloc_array_and_samples", code: status)) }
        convertedCapacity = samples
    }

    private func convert(planes: UnsafePointer<UnsafePointer<UInt8>?>?, count: Int32) throws(WriterError) {
        guard let resampler else { return }
        let capacity = swr_get_out_samples(resampler, count)
        guard capacity >= 0 else { throw .ffmpeg(FFmpegError(call: "swr_get_out_samples", code: capacity)) }
        if capacity == 0 { return }
        try ensureCapacity(max(capacity, frameSize))
        let produced = swr_convert(resampler, converted, capacity, planes.map { UnsafeMutablePointer(mutating: $0) }, count)
        guard produced >= 0 else { throw .ffmpeg(FFmpegError(call: "swr_convert", code: produced)) }
        if produced > 0 {
            let written = converted!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) { av_audio_fifo_write(fifo, $0, produced) }
            guard written >= produced else { throw .ffmpeg(FFmpegError(call: "av_audio_fifo_write", code: written < 0 ? written : cffmpeg_averror(ENOMEM))) }
            samplesQueued += Int64(produced)
        }
    }

    private func drainResampler() throws(WriterError) {
        try convert(planes: nil, count: 0)
    }

    private func encodeQueued(final: Bool, sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        while true {
            let available = av_audio_fifo_size(fifo)
            if available <= 0 { return }
            if available < frameSize && !final { return }
            let take = min(available, frameSize)
            if av_frame_is_writable(frame) == 0 {
                let status = av_frame_make_writable(frame)
                guard status >= 0 else { throw .ffmpeg(FFmpegError(call: "av_frame_make_writable", code: status)) }
            }
            frame.pointee.nb_samples = frameSize
            let read = withUnsafeMutablePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) { av_audio_fifo_read(fifo, $0, take) }
            }
            guard read == take else { throw .ffmpeg(FFmpegError(call: "av_audio_fifo_read", code: read < 0 ? read : cffmpeg_averror(EIO))) }
            // Only the very last frame may be short.
            if take < frameSize { frame.pointee.nb_samples = take }
            frame.pointee.pts = fifoTime ?? 0
            fifoTime = (fifoTime ?? 0) + Int64(frame.pointee.nb_samples)
            let status = avcodec_send_frame(context, frame)
            guard status >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_send_frame(\(encoderName))", code: status)) }
            try drain(sink)
            if take < frameSize { return }
        }
    }

    private func drain(_ sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        while true {
            let status = avcodec_receive_packet(context, packet)
            if status == cffmpeg_AVERROR_EAGAIN || status == cffmpeg_AVERROR_EOF { return }
            if status < 0 { throw .ffmpeg(FFmpegError(call: "avcodec_receive_packet(\(encoderName))", code: status)) }
            defer { av_packet_unref(packet) }
            try sink(packet)
        }
    }
}
