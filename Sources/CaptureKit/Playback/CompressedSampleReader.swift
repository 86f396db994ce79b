import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Reads the compressed samples of one track of a file as they are stored,
/// with their timing: what a passthrough writer input takes, for remuxing a
/// file or replaying a camera's compressed stream.
final class CompressedSampleReader {
    let path: String
    /// The track's codec and parameters, ready for `OutputSettings.passthrough`.
    let format: CompressedFormat
    private let file: MediaFile
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let packet: UnsafeMutablePointer<AVPacket>

    /// A reader for the default track of `mediaType`.
    init(path: String, mediaType: MediaType) throws(PlaybackError) {
        self.path = path
        file = try MediaFile(path: path)
        let type = mediaType == .video ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO
        guard let index = file.bestStream(type) else { throw .noTrack(path: path, mediaType: mediaType) }
        streamIndex = Int32(index)
        let stream = file.context.pointee.streams[index]!
        timeBase = stream.pointee.time_base
        let parameters = stream.pointee.codecpar.pointee
        let name = String(cString: avcodec_get_name(parameters.codec_id))
        let extradata = parameters.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(parameters.extradata_size))) } ?? []
        let descriptor = avcodec_descriptor_get(parameters.codec_id)
        let intraOnly = descriptor.map { $0.pointee.props & Int32(AV_CODEC_PROP_INTRA_ONLY) != 0 } ?? false
        format = CompressedFormat(mediaType: mediaType, codecName: name, width: Int(parameters.width), height: Int(parameters.height),
                                  sampleRate: Int(parameters.sample_rate), channels: Int(parameters.ch_layout.nb_channels),
                                  extradata: extradata, isIntraOnly: intraOnly || mediaType == .audio)
        for (other, candidate) in file.streams.enumerated() where other != index { candidate.pointee.discard = AVDISCARD_ALL }
        guard let packet = av_packet_alloc() else {
            throw .ffmpeg(path: path, error: FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM)))
        }
        self.packet = packet
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&pointer)
    }

    /// The next sample, or nil at the end of the track.
    func next() throws(PlaybackError) -> CompressedSample? {
        while true {
            let status = av_read_frame(file.context, packet)
            if status == cffmpeg_AVERROR_EOF { return nil }
            if status < 0 { throw .corrupt(path: path, reason: FFmpegError(call: "av_read_frame", code: status).reason) }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex, packet.pointee.size > 0 else { continue }
            let data = Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
            let pts = packet.pointee.pts == cffmpeg_AV_NOPTS_VALUE ? packet.pointee.dts : packet.pointee.pts
            let dts = packet.pointee.dts == cffmpeg_AV_NOPTS_VALUE ? pts : packet.pointee.dts
            return CompressedSample(
                data: data,
                presentationTime: time(pts),
                decodeTime: time(dts),
                duration: packet.pointee.duration > 0 ? time(packet.pointee.duration) : nil,
                isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0)
        }
    }

    private func time(_ ticks: Int64) -> MediaTime {
        MediaTime(value: ticks, timescale: timeBase.den) * Int64(timeBase.num)
    }
}
