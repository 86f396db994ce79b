// One WebRTC viewer as GStreamer's webrtcbin serves it: the answer to a WHEP
// offer, then H.264 and Opus packets pushed in as the service's shared encoders
// make them. ICE, DTLS, SRTP and RTCP are webrtcbin's (and libnice's); this is
// the glue Swift cannot write itself (variadic GObject signals and properties).
#ifndef CAPCTL_WEBRTC_PEER_H
#define CAPCTL_WEBRTC_PEER_H

#include <stddef.h>
#include <stdint.h>

typedef struct cw_peer cw_peer;

/// What a peer is made with.
typedef struct {
    /// stun://HOST:PORT, or NULL.
    const char *stun_server;
    /// turn://USER:PASSWORD@HOST:PORT (or turns://) each; `turn_count` of them.
    const char *const *turn_servers;
    int turn_count;
    /// The UDP ports ICE may use (0 and 0: any).
    unsigned min_port, max_port;
    /// The local addresses candidates are gathered on (`address_count` of
    /// them); none: every address but loopback, as libnice does.
    const char *const *addresses;
    int address_count;
    /// Whether an audio track (Opus, 48 kHz) is offered beside the video.
    int with_audio;
    /// Channels of that audio (1 or 2).
    int audio_channels;
    /// How long to wait for ICE candidates before answering (milliseconds).
    int gathering_timeout_ms;
} cw_config;

/// webrtcbin's peer-connection states (GstWebRTCPeerConnectionState).
enum {
    CW_STATE_NEW = 0,
    CW_STATE_CONNECTING = 1,
    CW_STATE_CONNECTED = 2,
    CW_STATE_DISCONNECTED = 3,
    CW_STATE_FAILED = 4,
    CW_STATE_CLOSED = 5,
};

/// What webrtcbin's statistics say of one peer (both tracks together).
typedef struct {
    uint64_t bytes_sent;
    uint64_t packets_sent;
    /// From the viewer's RTCP receiver reports.
    int64_t packets_lost;
    double round_trip_seconds;
    int has_round_trip;
    /// The highest sequence numbers the viewer's receiver reports name, summed
    /// over the tracks: it grows while the viewer receives.
    uint64_t highest_received;
    /// Whether the viewer said RTCP BYE.
    int said_bye;
} cw_stats;

/// Loads GStreamer and checks that webrtcbin, the payloaders and libnice's
/// plugin are there. 0 on success; otherwise a message to free with cw_free.
int cw_initialize(char **error);

/// Answers `offer` (SDP text): a peer sending H.264 (and Opus) to it, whose
/// answer (SDP text with its candidates) is put in `answer`. NULL on failure,
/// with `error` set and `refused` 1 when the offer itself cannot be served (no
/// H.264, not SDP) rather than the peer failing to start.
cw_peer *cw_peer_create(const char *offer, const cw_config *config, char **answer, char **error, int *refused);

/// One H.264 access unit (Annex B), captured at `pts_ns` on CLOCK_MONOTONIC.
void cw_peer_push_video(cw_peer *peer, const void *data, size_t size, int64_t pts_ns, int keyframe);
/// One Opus packet, captured at `pts_ns` on CLOCK_MONOTONIC.
void cw_peer_push_audio(cw_peer *peer, const void *data, size_t size, int64_t pts_ns, int64_t duration_ns);
/// 1 once for each keyframe the viewer asked for (a PLI or FIR) since the last call.
int cw_peer_take_keyframe_request(cw_peer *peer);
/// One of the CW_STATE_ values.
int cw_peer_connection_state(cw_peer *peer);
/// webrtcbin's statistics, waiting at most `timeout_ms`; 0 when they came.
int cw_peer_stats(cw_peer *peer, cw_stats *stats, int timeout_ms);
/// Stops the peer (its pipeline to NULL) and frees it.
void cw_peer_destroy(cw_peer *peer);
void cw_free(void *pointer);

#endif
