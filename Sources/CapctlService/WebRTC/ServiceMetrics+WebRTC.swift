import CaptureKit

extension CaptureService {
    /// Viewers per camera and transport, and what the WebRTC viewers' RTCP
    /// says: bytes and packets sent, packets lost, round-trip time. Every
    /// camera appears from the start, at 0 until it is watched.
    func addWebRTCMetrics(to out: inout PrometheusExposition) {
        let cameras = inputs.indices.filter { inputs[$0].mediaType == .video }.map(String.init)
        let snapshot = webRTCViewers.snapshot
        let current = documents(of: snapshot.viewers)
        let ended = snapshot.ended
        var mjpeg: [String: Int] = [:]
        for view in liveView.statistics { mjpeg[String(view.cameraIndex), default: 0] += view.viewers }
        for camera in cameras {
            out.add("capctl_viewers", .gauge, help: "Viewers watching a camera now, by transport (webrtc: WHEP; mjpeg: /stream.mjpg).",
                    labels: [("camera", camera), ("transport", "webrtc")], value: current.filter { $0.camera == camera }.count)
            out.add("capctl_viewers", .gauge, help: "Viewers watching a camera now, by transport (webrtc: WHEP; mjpeg: /stream.mjpg).",
                    labels: [("camera", camera), ("transport", "mjpeg")], value: mjpeg[camera] ?? 0)
        }
        let families: [(String, String, (CaptureService.WebRTCViewerDocument) -> Int64, (WebRTCViewers.Totals) -> Int64)] = [
            ("capctl_webrtc_viewers_total", "WebRTC viewers a camera has had (watching now or gone).", { _ in 1 }, { Int64($0.viewers) }),
            ("capctl_webrtc_sent_bytes_total", "RTP payload bytes sent to a camera's WebRTC viewers (video and audio; RTP, SRTP, UDP and IP headers not counted), over every viewer.", \.bytesSent, \.bytesSent),
            ("capctl_webrtc_sent_packets_total", "RTP packets sent to a camera's WebRTC viewers, over every viewer.", \.packetsSent, \.packetsSent),
            ("capctl_webrtc_lost_packets_total", "RTP packets a camera's WebRTC viewers reported lost (RTCP receiver reports), over every viewer.", \.packetsLost, \.packetsLost),
        ]
        for (name, help, now, gone) in families {
            for camera in cameras {
                let value = current.filter { $0.camera == camera }.reduce(Int64(0)) { $0 + now($1) } + (ended[camera].map(gone) ?? 0)
                out.add(name, .counter, help: help, labels: [("camera", camera)], value: value)
            }
        }
        for viewer in current {
            guard let roundTrip = viewer.roundTripTime else { continue }
            out.add("capctl_webrtc_round_trip_seconds", .gauge, help: "The round trip RTCP measured to a WebRTC viewer, latest.",
                    labels: [("camera", viewer.camera), ("viewer", String(viewer.id.prefix(8)))], value: roundTrip)
        }
        for (reason, count) in webRTCViewers.endReasons.sorted(by: { $0.key < $1.key }) {
            out.add("capctl_webrtc_viewers_ended_total", .counter,
                    help: "WebRTC viewers that left, by why: deleted (DELETE), closed, failed, disconnected (for 10 s), silent (no receiver report of more for 10 s), no-connection (none within 15 s), camera-ended, shutdown.",
                    labels: [("reason", reason)], value: count)
        }
    }
}
