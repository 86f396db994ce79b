import CapctlCommands
import CaptureKit
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The service's metrics, as `GET /metrics` gives them to Prometheus: read
/// from the session's inputs, the recordings the service lists, their
/// streams, the live views (whose per-camera totals CaptureKit keeps over
/// views that ended) and the folder, at each scrape.
package enum ServiceMetrics {
    /// When this process started (Unix time in seconds), from /proc as
    /// Prometheus's client libraries read it; nil where /proc cannot say.
    static let processStartTime: Double? = {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let system = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After the command's name in parentheses: state (field 3) … starttime (field 22), in clock ticks since boot.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
        guard let line = system.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }),
              let boot = line.split(separator: " ").last.flatMap({ Double($0) }) else { return nil }
        let perSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard perSecond > 0 else { return nil }
        return boot + ticks / perSecond
    }()
}

extension CaptureService {
    /// The metrics now, for `GET /metrics`.
    package func metricsExposition() -> PrometheusExposition {
        var out = PrometheusExposition()
        addServiceMetrics(to: &out)
        addInputMetrics(to: &out)
        addRecordingMetrics(to: &out)
        addViewMetrics(to: &out)
        addWebRTCMetrics(to: &out)
        return out
    }

    private func addServiceMetrics(to out: inout PrometheusExposition) {
        out.add("capctl_build_info", .gauge, help: "Always 1; version is capctl's.",
                labels: [("version", Capctl.configuration.version)], value: 1)
        out.add("capctl_uptime_seconds", .gauge, help: "Seconds since the service opened its devices.",
                value: Double(MonotonicClock.nowNanoseconds() - startedAt) / 1e9)
        if let start = ServiceMetrics.processStartTime {
            out.add("process_start_time_seconds", .gauge, help: "Start time of the process since the Unix epoch, in seconds.", value: start)
        }
        if let free = folder.freeSpace {
            out.add("capctl_free_space_bytes", .gauge, help: "Bytes free on the volume of the service's folder (--dir).", value: free)
        }
        out.add("capctl_recordings_active", .gauge, help: "Recordings running or paused now.",
                value: listedRecordings.filter { !$0.hasEnded }.count)
    }

    private func addInputMetrics(to out: inout PrometheusExposition) {
        for (index, input) in inputs.enumerated() {
            let source = input.source
            let video = input.mediaType == .video
            let labels = [("input", String(index)), ("device", source.path), ("name", source.localizedName),
                          ("media", video ? "video" : "audio")]
            if video {
                out.add("capctl_input_frames_captured_total", .counter, help: "Frames the session took from a camera.",
                        labels: labels, value: input.capturedSampleCount)
                out.add("capctl_input_frames_dropped_total", .counter, help: "Frames a camera lost (gaps in its frame sequence).",
                        labels: labels, value: input.droppedSampleCount)
            } else {
                out.add("capctl_input_samples_captured_total", .counter, help: "Sample frames (one per channel set) the session took from a microphone.",
                        labels: labels, value: input.capturedSampleCount)
                out.add("capctl_input_samples_dropped_total", .counter, help: "Sample frames a microphone lost (overruns).",
                        labels: labels, value: input.droppedSampleCount)
            }
        }
    }

    private func addRecordingMetrics(to out: inout PrometheusExposition) {
        let measured = listedRecordings.map { ($0.id, $0.measurement) }
        for (id, recording) in measured {
            for state in ServiceRecording.Measurement.State.allCases {
                out.add("capctl_recording_state", .gauge, help: "1 for the recording's state (running, paused, finished), 0 for the others.",
                        labels: [("recording", id), ("state", state.rawValue)], value: recording.state == state ? 1 : 0)
            }
        }
        for (id, recording) in measured {
            let labels = [("recording", id)]
            let statistics = recording.statistics
            out.add("capctl_recording_bytes_total", .counter, help: "Bytes written to the recording's files.", labels: labels, value: statistics.bytes)
            out.add("capctl_recording_frames_total", .counter, help: "Video frames in the recording's files.", labels: labels, value: statistics.videoFrames)
            out.add("capctl_recording_audio_samples_total", .counter, help: "Audio sample frames in the recording's files.",
                    labels: labels, value: statistics.audioSamples)
            out.add("capctl_recording_duration_seconds", .gauge, help: "Media time recorded, pauses left out.",
                    labels: labels, value: statistics.duration.seconds)
            out.add("capctl_recording_dropped_frames_total", .counter,
                    help: "Video frames lost while recording: by the camera, by a full queue, refused by the writer or before a keyframe.",
                    labels: labels, value: statistics.droppedVideoFrames)
            out.add("capctl_recording_dropped_audio_samples_total", .counter, help: "Audio sample frames lost while recording.",
                    labels: labels, value: statistics.droppedAudioSamples)
        }
        for (id, recording) in measured {
            guard let reason = recording.endReason else { continue }
            out.add("capctl_recording_end_info", .gauge,
                    help: "1 for a finished recording, with the reason it ended (its finished event's reason).",
                    labels: [("recording", id), ("reason", reason)], value: 1)
        }
        addStreamMetrics(measured, to: &out)
    }

    private func addStreamMetrics(_ measured: [(String, ServiceRecording.Measurement)], to out: inout PrometheusExposition) {
        for (id, recording) in measured {
            for (index, stream) in recording.streams.enumerated() {
                let labels = [("recording", id), ("stream", String(index + 1)), ("url", Self.streamLabel(stream.destination))]
                let statistics = stream.statistics
                out.add("capctl_stream_up", .gauge, help: "1 while the stream's server has it (connected), else 0.",
                        labels: labels, value: statistics.state == .connected ? 1 : 0)
                out.add("capctl_stream_sent_bytes_total", .counter, help: "Bytes the stream wrote to the network.", labels: labels, value: statistics.bytesSent)
                out.add("capctl_stream_sent_frames_total", .counter, help: "Video frames the stream sent.", labels: labels, value: statistics.videoFramesSent)
                out.add("capctl_stream_dropped_frames_total", .counter,
                        help: "Video frames captured for the stream that never reached its server (full queue, disconnected).",
                        labels: labels, value: statistics.droppedVideoFrames)
                out.add("capctl_stream_dropped_audio_samples_total", .counter, help: "Audio sample frames that never reached the stream's server.",
                        labels: labels, value: statistics.droppedAudioSamples)
                out.add("capctl_stream_connections_total", .counter, help: "Connections the stream's server accepted.",
                        labels: labels, value: statistics.connections)
                out.add("capctl_stream_queue_latency_seconds", .gauge, help: "How long the oldest sample waiting to be sent has waited.",
                        labels: labels, value: statistics.queueLatency.seconds)
            }
        }
    }

    private func addViewMetrics(to out: inout PrometheusExposition) {
        let views = liveView.statistics
        // Views of one camera whose settings differ only in ways the labels do not show are summed.
        var viewers: [[String]: Int] = [:]
        var order: [[String]] = []
        for view in views {
            let key = [String(view.cameraIndex), String(view.width), String(view.height), view.frameRate.map(PrometheusExposition.format) ?? "camera"]
            if viewers[key] == nil { order.append(key) }
            viewers[key, default: 0] += view.viewers
        }
        for key in order {
            out.add("capctl_view_viewers", .gauge, help: "Viewers watching a live view now (fps camera: every frame of the camera).",
                    labels: [("camera", key[0]), ("width", key[1]), ("height", key[2]), ("fps", key[3])], value: viewers[key] ?? 0)
        }
        // Every camera from the start, at 0 until it is watched (a counter that appears later loses its first increase).
        let totals = liveView.totals
        let families: [(String, String, KeyPath<LiveViewTotals, Int>)] = [
            ("capctl_view_frames_encoded_total", "Pictures live views made of a camera (JPEG encoded or passed through), over every view.", \.framesMade),
            ("capctl_view_frames_skipped_total", "Camera frames a live view's encoder was too busy to take, over every view.", \.framesSkipped),
            ("capctl_view_frames_sent_total", "Pictures handed to live-view viewers, counted per viewer, over every view.", \.framesDelivered),
            ("capctl_view_sent_bytes_total", "Bytes of the pictures handed to live-view viewers, counted per viewer, over every view.", \.bytesDelivered),
            ("capctl_view_frames_dropped_total", "Pictures a live-view viewer missed (a newer one replaced them before it took them, or its connection was full), over every view.", \.framesDropped),
        ]
        for (name, help, counter) in families {
            for camera in totals {
                out.add(name, .counter, help: help, labels: [("camera", String(camera.cameraIndex))], value: camera[keyPath: counter])
            }
        }
    }

    /// A stream's URL as a label: scheme, host, port and the path without its
    /// last segment (a stream key), no credentials and no query (an SRT passphrase).
    package static func streamLabel(_ destination: StreamDestination) -> String {
        var shown = destination.description
        for hidden in ["?…", "/…"] where shown.hasSuffix(hidden) { shown.removeLast(hidden.count) }
        return shown
    }
}
