import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// What a media file holds, as `capctl info` shows it: the container, its
/// timing and metadata, and each track with counts taken by reading the
/// whole file (frames by packet, audio samples by decoding).
package struct MediaInfo: Sendable {
    package struct Track: Sendable {
        package var index: Int
        /// video, audio, subtitle, data or attachment.
        package var mediaType: String
        package var codec: String
        package var profile: String?
        package var width: Int?
        package var height: Int?
        package var pixelFormat: String?
        /// Frames per second as the container states it.
        package var frameRate: Double?
        package var sampleRate: Int?
        package var channels: Int?
        package var channelLayout: String?
        /// Video: frames that play (edited-out frames are not counted).
        package var frameCount: Int?
        package var keyframeCount: Int?
        /// Audio: decoded samples per channel.
        package var sampleCount: Int64?
        package var startTime: MediaTime?
        package var duration: MediaTime?
        /// Bits per second over the track's duration.
        package var bitRate: Int64?
        /// The MP4/QuickTime enabled flag (whether the track plays); nil
        /// where the container has no such flag.
        package var isEnabled: Bool?
        /// The Matroska/WebM default flag (whether a player picks the track
        /// when it has to choose); nil where the container has no such flag.
        package var isDefault: Bool?
        /// The MP4/QuickTime alternate group, 0 for none; nil where the container has none.
        package var alternateGroup: Int?
        package var language: String?
        /// The track's name (`AssetWriterInput.title`: for a recording, the
        /// camera's name and unique ID): Matroska's track title, or the
        /// MP4/QuickTime handler name unless it is a muxer's default one.
        package var title: String?
        /// The MP4/QuickTime edit list; nil where the container has none.
        package var edits: [MovieStructure.Edit]?
    }

    package var path: String
    /// libavformat's short name (`mov,mp4,m4a,3gp,3g2,mj2`) and its long one.
    package var formatName: String
    package var formatLongName: String
    package var fileSize: Int64
    package var duration: MediaTime
    package var startTime: MediaTime
    package var bitRate: Int64?
    package var metadata: [String: String]
    package var tracks: [Track]
    /// MP4/QuickTime only: the movie time scale, fragments, layout.
    package var movieTimescale: Int?
    package var fragmentCount: Int?
    package var indexBeforeMedia: Bool?
    /// MP4/QuickTime only: whether the samples are indexed fragment by
    /// fragment (a recording kept in fragments, or one that never finished)
    /// rather than in one index (a regular movie).
    package var isFragmented: Bool?
    /// MP4/QuickTime only: whether the file was finished (see
    /// `MovieStructure.isFinished`); false for a recording that was killed.
    package var isFinished: Bool?
    /// The file ends in the middle of a box (a recording cut off).
    package var isTruncated: Bool
    /// Its chapters, in time order (a recording's markers; see
    /// `MediaInfo+Chapters.swift`); empty when it has none.
    package var chapters: [MediaChapter] = []

    /// Handler names muxers write when a track has no name of its own.
    static let defaultHandlerNames: Set<String> = ["VideoHandler", "SoundHandler", "DataHandler", "SubtitleHandler", "TextHandler",
                                                   "Core Media Video", "Core Media Audio", "Mainconcept Video Media Handler",
                                                   "ISO Media file produced by Google Inc."]

    static func trackTitle(_ metadata: OpaquePointer?) -> String? {
        for key in ["title", "handler_name"] {
            guard let entry = av_dict_get(metadata, key, nil, 0) else { continue }
            let value = String(cString: entry.pointee.value)
            if !value.isEmpty && !defaultHandlerNames.contains(value) { return value }
        }
        return nil
    }

    /// Reads `path` through once. Throws for a missing, unreadable or
    /// non-media file.
    package static func read(path: String) throws(PlaybackError) -> MediaInfo {
        let file = try MediaFile(path: path)
        let context = file.context
        let info = (try? Posix.stat(path)) ?? Glibc.stat()
        let structure = try? MovieStructure.read(path: path)
        let streams = file.streams
        let isMatroska = String(cString: context.pointee.iformat.pointee.name).hasPrefix("matroska")

        // Count packets per stream and decode audio to count its samples.
        var counts = [(frames: Int, keyframes: Int, bytes: Int64, first: Int64?, end: Int64?)](repeating: (0, 0, 0, nil, nil), count: streams.count)
        var decoders = [Int: Decoder]()
        var samples = [Int: Int64]()
        for (index, stream) in streams.enumerated() where stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO {
            decoders[index] = try? Decoder(stream: stream, path: path)
            samples[index] = 0
        }
        guard let packet = av_packet_alloc(), let frame = av_frame_alloc() else {
            throw .ffmpeg(path: path, error: FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM)))
        }
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        var framePointer: UnsafeMutablePointer<AVFrame>? = frame
        defer {
            av_packet_free(&packetPointer)
            av_frame_free(&framePointer)
        }
        func drain(_ decoder: Decoder, _ index: Int) {
            while avcodec_receive_frame(decoder.context, frame) >= 0 {
                samples[index, default: 0] += Int64(frame.pointee.nb_samples)
                av_frame_unref(frame)
            }
        }
        var damaged: String?
        while true {
            let status = av_read_frame(context, packet)
            if status == cffmpeg_AVERROR_EOF { break }
            if status < 0 {
                damaged = FFmpegError(call: "av_read_frame", code: status).reason
                break
            }
            defer { av_packet_unref(packet) }
            let index = Int(packet.pointee.stream_index)
            guard index < counts.count else { continue }
            if let decoder = decoders[index] {
                if avcodec_send_packet(decoder.context, packet) >= 0 { drain(decoder, index) }
            }
            if packet.pointee.flags & AV_PKT_FLAG_DISCARD != 0 { continue }
            counts[index].frames += 1
            if packet.pointee.flags & AV_PKT_FLAG_KEY != 0 { counts[index].keyframes += 1 }
            counts[index].bytes += Int64(packet.pointee.size)
            let pts = packet.pointee.pts != cffmpeg_AV_NOPTS_VALUE ? packet.pointee.pts : packet.pointee.dts
            if pts != cffmpeg_AV_NOPTS_VALUE {
                counts[index].first = min(counts[index].first ?? pts, pts)
                counts[index].end = max(counts[index].end ?? pts, pts + max(0, packet.pointee.duration))
            }
        }
        for (index, decoder) in decoders {
            if avcodec_send_packet(decoder.context, nil) >= 0 { drain(decoder, index) }
        }
        if let damaged, counts.allSatisfy({ $0.frames == 0 }) {
            throw .corrupt(path: path, reason: damaged)
        }

        var tracks = [Track]()
        let movieTracks = structure?.tracks ?? []
        for (index, stream) in streams.enumerated() {
            let parameters = stream.pointee.codecpar.pointee
            let base = stream.pointee.time_base
            func time(_ ticks: Int64) -> MediaTime { MediaTime(value: ticks, timescale: base.den) * Int64(base.num) }
            let type = av_get_media_type_string(parameters.codec_type).map { String(cString: $0) } ?? "unknown"
            let isVideo = parameters.codec_type == AVMEDIA_TYPE_VIDEO
            let isAudio = parameters.codec_type == AVMEDIA_TYPE_AUDIO
            var track = Track(index: index, mediaType: type, codec: String(cString: avcodec_get_name(parameters.codec_id)))
            // Only Matroska says which track is the default one (MPEG-TS, WAV
            // and the others have no flag; libavformat's disposition there
            // is its own guess).
            if isMatroska { track.isDefault = stream.pointee.disposition & AV_DISPOSITION_DEFAULT != 0 }
            track.profile = avcodec_profile_name(parameters.codec_id, parameters.profile).map { String(cString: $0) }
            if isVideo {
                track.width = Int(parameters.width)
                track.height = Int(parameters.height)
                track.pixelFormat = av_get_pix_fmt_name(AVPixelFormat(parameters.format)).map { String(cString: $0) }
                let rate = stream.pointee.avg_frame_rate.num > 0 ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
                if rate.num > 0 && rate.den > 0 { track.frameRate = Double(rate.num) / Double(rate.den) }
                track.frameCount = counts[index].frames
                track.keyframeCount = counts[index].keyframes
            }
            if isAudio {
                track.sampleRate = Int(parameters.sample_rate)
                track.channels = Int(parameters.ch_layout.nb_channels)
                var description = [CChar](repeating: 0, count: 64)
                var layout = parameters.ch_layout
                // A layout with no order ("1 channels") says no more than the count.
                if layout.order != AV_CHANNEL_ORDER_UNSPEC, av_channel_layout_describe(&layout, &description, description.count) >= 0 {
                    track.channelLayout = String(decoding: description.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
                track.frameCount = counts[index].frames
                track.sampleCount = decoders[index] != nil ? samples[index] : nil
            }
            if let first = counts[index].first, let end = counts[index].end {
                track.startTime = time(first)
                track.duration = time(end - first)
            }
            // The container's own figure (after its edit list) where it gives one.
            if stream.pointee.duration > 0 && stream.pointee.duration != cffmpeg_AV_NOPTS_VALUE {
                track.duration = time(stream.pointee.duration)
            }
            if isAudio, let count = track.sampleCount, parameters.sample_rate > 0 {
                track.duration = MediaTime(value: count, timescale: parameters.sample_rate)
            }
            if let duration = track.duration, duration > .zero {
                track.bitRate = Int64((Double(counts[index].bytes * 8) / duration.seconds).rounded())
            }
            if let language = av_dict_get(stream.pointee.metadata, "language", nil, 0) {
                let value = String(cString: language.pointee.value)
                if value != "und" { track.language = value }
            }
            track.title = Self.trackTitle(stream.pointee.metadata)
            if let structure, index < movieTracks.count {
                track.alternateGroup = Int(movieTracks[index].alternateGroup)
                track.isEnabled = movieTracks[index].isEnabled
                track.edits = movieTracks[index].edits
                _ = structure
            }
            tracks.append(track)
        }

        var metadata = [String: String]()
        var entry: UnsafeMutablePointer<AVDictionaryEntry>?
        while let next = av_dict_get(context.pointee.metadata, "", entry, AV_DICT_IGNORE_SUFFIX) {
            metadata[String(cString: next.pointee.key)] = String(cString: next.pointee.value)
            entry = next
        }
        let format = context.pointee.iformat.pointee
        var result = MediaInfo(
            path: path,
            formatName: String(cString: format.name),
            formatLongName: format.long_name.map { String(cString: $0) } ?? String(cString: format.name),
            fileSize: Int64(info.st_size),
            duration: file.duration,
            startTime: file.startTime,
            bitRate: context.pointee.bit_rate > 0 ? context.pointee.bit_rate : nil,
            metadata: metadata,
            tracks: tracks,
            movieTimescale: structure.map { Int($0.movieTimescale) },
            fragmentCount: structure.map(\.fragmentCount),
            indexBeforeMedia: structure.map(\.indexBeforeMedia),
            isFragmented: structure.map(\.isFragmented),
            isFinished: structure.map(\.isFinished),
            isTruncated: structure?.isTruncated ?? (damaged != nil))
        result.chapters = chapters(of: context, duration: file.duration)
        return result
    }
}
