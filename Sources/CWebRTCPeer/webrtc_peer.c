// The glue between capctl-serve's WebRTC viewers and GStreamer's webrtcbin.
// Each peer is one pipeline: appsrc (H.264 access units) → rtph264pay and
// appsrc (Opus packets) → rtpopuspay, into one webrtcbin that answers the
// viewer's offer. Nothing here encodes: the packets come from the service's
// shared encoders, the same for every viewer.
#include "webrtc_peer.h"

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/sdp/sdp.h>
#define GST_USE_UNSTABLE_API
#include <gst/webrtc/webrtc.h>
#include <nice/agent.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

struct cw_peer {
    GstElement *pipeline;
    GstElement *webrtc;
    GstElement *video;
    GstElement *audio;
    GstClockTime base_time;
    /// The profile of the offer's H.264 that was chosen, as GStreamer names it.
    char profile[32];
    gint keyframe_requests;
};

static char *copy_message(const char *format, const char *detail) {
    return g_strdup_printf(format, detail ? detail : "");
}

int cw_initialize(char **error) {
    GError *failure = NULL;
    if (!gst_init_check(NULL, NULL, &failure)) {
        *error = copy_message("GStreamer does not start: %s", failure ? failure->message : "");
        g_clear_error(&failure);
        return -1;
    }
    // The elements a peer is made of, and the packages that hold them (Debian's names).
    static const char *const needed[][2] = {
        {"webrtcbin", "gstreamer1.0-plugins-bad"}, {"dtlssrtpenc", "gstreamer1.0-plugins-bad"},
        {"srtpenc", "gstreamer1.0-plugins-bad"}, {"nicesink", "gstreamer1.0-nice"},
        {"rtph264pay", "gstreamer1.0-plugins-good"}, {"rtpopuspay", "gstreamer1.0-plugins-good"},
        {"appsrc", "gstreamer1.0-plugins-base"}, {"rtpbin", "gstreamer1.0-plugins-good"},
    };
    for (size_t index = 0; index < sizeof needed / sizeof needed[0]; index++) {
        GstElementFactory *factory = gst_element_factory_find(needed[index][0]);
        if (!factory) {
            *error = g_strdup_printf("GStreamer has no %s element (install %s)", needed[index][0], needed[index][1]);
            return -1;
        }
        gst_object_unref(factory);
    }
    return 0;
}

// MARK: Promises with a time limit

typedef struct {
    GMutex mutex;
    GCond changed;
    gboolean done;
    gint references;
} promise_waiter;

static void waiter_release(gpointer data) {
    promise_waiter *waiter = data;
    if (g_atomic_int_dec_and_test(&waiter->references)) {
        g_mutex_clear(&waiter->mutex);
        g_cond_clear(&waiter->changed);
        g_free(waiter);
    }
}

static void waiter_signal(GstPromise *promise, gpointer data) {
    (void)promise;
    promise_waiter *waiter = data;
    g_mutex_lock(&waiter->mutex);
    waiter->done = TRUE;
    g_cond_broadcast(&waiter->changed);
    g_mutex_unlock(&waiter->mutex);
}

static GstPromise *timed_promise(promise_waiter **waiter) {
    *waiter = g_new0(promise_waiter, 1);
    g_mutex_init(&(*waiter)->mutex);
    g_cond_init(&(*waiter)->changed);
    (*waiter)->references = 2;  // this caller's and the promise's
    return gst_promise_new_with_change_func(waiter_signal, *waiter, waiter_release);
}

/// Whether the promise was replied to within `timeout_ms`; its reply (owned by
/// the promise, and NULL for a success without one) in `reply`.
static gboolean await_reply(GstPromise *promise, promise_waiter *waiter, int timeout_ms, const GstStructure **reply) {
    *reply = NULL;
    gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * G_TIME_SPAN_MILLISECOND;
    g_mutex_lock(&waiter->mutex);
    while (!waiter->done) {
        if (!g_cond_wait_until(&waiter->changed, &waiter->mutex, end)) break;
    }
    gboolean done = waiter->done;
    g_mutex_unlock(&waiter->mutex);
    waiter_release(waiter);
    if (!done) {
        // Interrupted, a reply webrtcbin still makes is freed without a word (an expired
        // promise would refuse it with a critical and leak it).
        gst_promise_interrupt(promise);
        return FALSE;
    }
    if (gst_promise_wait(promise) != GST_PROMISE_RESULT_REPLIED) return FALSE;
    *reply = gst_promise_get_reply(promise);
    return TRUE;
}

/// NULL when the promise was replied to without an error; else a message (to free).
static char *outcome(GstPromise *promise, promise_waiter *waiter, const char *what, const GstStructure **reply_out) {
    const GstStructure *reply = NULL;
    if (!await_reply(promise, waiter, 5000, &reply)) return g_strdup_printf("%s: webrtcbin gave no answer in time", what);
    if (reply_out) *reply_out = reply;
    if (reply && gst_structure_has_field(reply, "error")) {
        GError *failure = NULL;
        gst_structure_get(reply, "error", G_TYPE_ERROR, &failure, NULL);
        char *message = g_strdup_printf("%s: %s", what, failure ? failure->message : "failed");
        g_clear_error(&failure);
        return message;
    }
    return NULL;
}

// MARK: The offer

/// The payload type of the offer's best H.264 (packetization mode 1; High
/// profile first, which the shared encoder makes, then Main, then
/// constrained baseline), or -1.
static int choose_h264(const GstSDPMedia *media, GstCaps **caps) {
    int chosen = -1, score = -1;
    for (guint index = 0; index < gst_sdp_media_formats_len(media); index++) {
        int payload = atoi(gst_sdp_media_get_format(media, index));
        GstCaps *offered = gst_sdp_media_get_caps_from_media(media, payload);
        if (!offered) continue;
        GstStructure *structure = gst_caps_get_structure(offered, 0);
        const char *name = gst_structure_get_string(structure, "encoding-name");
        const char *mode = gst_structure_get_string(structure, "packetization-mode");
        // GStreamer turns the fmtp's profile-level-id into its own profile name.
        const char *profile = gst_structure_get_string(structure, "profile");
        if (name && g_ascii_strcasecmp(name, "H264") == 0 && mode && strcmp(mode, "1") == 0) {
            int this_score = 1;
            if (g_strcmp0(profile, "high") == 0) this_score = 4;
            else if (g_strcmp0(profile, "main") == 0) this_score = 3;
            else if (g_strcmp0(profile, "constrained-baseline") == 0) this_score = 2;
            if (this_score > score) {
                score = this_score;
                chosen = payload;
                if (*caps) gst_caps_unref(*caps);
                *caps = gst_caps_ref(offered);
            }
        }
        gst_caps_unref(offered);
    }
    return chosen;
}

static int choose_opus(const GstSDPMedia *media, GstCaps **caps) {
    for (guint index = 0; index < gst_sdp_media_formats_len(media); index++) {
        int payload = atoi(gst_sdp_media_get_format(media, index));
        GstCaps *offered = gst_sdp_media_get_caps_from_media(media, payload);
        if (!offered) continue;
        const char *name = gst_structure_get_string(gst_caps_get_structure(offered, 0), "encoding-name");
        if (name && g_ascii_strcasecmp(name, "OPUS") == 0) {
            *caps = offered;
            return payload;
        }
        gst_caps_unref(offered);
    }
    return -1;
}

/// Leaves only `payload` in a media section of the offer: its format, and its
/// rtpmap, fmtp and rtcp-fb lines. webrtcbin answers with the first of the
/// offer's codecs that fits, and holds the payloader to that one's profile;
/// this makes it the one chosen here.
static void keep_only(GstSDPMedia *media, int payload) {
    for (guint index = gst_sdp_media_formats_len(media); index-- > 0;) {
        if (atoi(gst_sdp_media_get_format(media, index)) != payload) gst_sdp_media_remove_format(media, index);
    }
    static const char *const per_payload[] = {"rtpmap", "fmtp", "rtcp-fb"};
    for (guint index = gst_sdp_media_attributes_len(media); index-- > 0;) {
        const GstSDPAttribute *attribute = gst_sdp_media_get_attribute(media, index);
        for (size_t kind = 0; kind < 3; kind++) {
            if (g_strcmp0(attribute->key, per_payload[kind]) == 0 && attribute->value && atoi(attribute->value) != payload &&
                g_ascii_isdigit(attribute->value[0])) {
                gst_sdp_media_remove_attribute(media, index);
                break;
            }
        }
    }
}

/// The offer's caps as a transceiver's codec preference: RTP caps of that one payload.
static void as_preference(GstCaps *caps, const char *kind) {
    GstStructure *structure = gst_caps_get_structure(caps, 0);
    gst_structure_set_name(structure, "application/x-rtp");
    gst_structure_set(structure, "media", G_TYPE_STRING, kind, NULL);
}

// MARK: Building

/// appsrc → payloader → a new sink pad of webrtcbin, its transceiver send-only with `preference`.
/// The payloader's SSRC is chosen here and named in the preference, so that the answer
/// signals it (a=ssrc): a browser then knows the stream by its SSRC, not only by its payload
/// type, which Chromium does not go by when the bundle holds an inactive section (a camera
/// without a microphone answers the offer's audio so).
static gboolean add_branch(cw_peer *peer, GstElement *source, GstElement *payloader, GstCaps *preference) {
    guint ssrc = g_random_int_range(1, G_MAXINT32);
    g_object_set(payloader, "ssrc", ssrc, NULL);
    gst_caps_set_simple(preference, "ssrc", G_TYPE_UINT, ssrc, NULL);
    gst_bin_add_many(GST_BIN(peer->pipeline), source, payloader, NULL);
    if (!gst_element_link(source, payloader)) return FALSE;
    GstPad *sink = gst_element_request_pad_simple(peer->webrtc, "sink_%u");
    GstPad *output = gst_element_get_static_pad(payloader, "src");
    gboolean linked = sink && output && gst_pad_link(output, sink) == GST_PAD_LINK_OK;
    if (linked) {
        GstWebRTCRTPTransceiver *transceiver = NULL;
        g_object_get(sink, "transceiver", &transceiver, NULL);
        if (transceiver) {
            g_object_set(transceiver, "direction", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY,
                         "codec-preferences", preference, NULL);
            gst_object_unref(transceiver);
        } else {
            linked = FALSE;
        }
    }
    if (output) gst_object_unref(output);
    if (sink) gst_object_unref(sink);
    return linked;
}

static GstPadProbeReturn on_upstream_event(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    cw_peer *peer = data;
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    const GstStructure *structure = event ? gst_event_get_structure(event) : NULL;
    if (structure && gst_structure_has_name(structure, "GstForceKeyUnit")) g_atomic_int_set(&peer->keyframe_requests, 1);
    return GST_PAD_PROBE_OK;
}

static GstElement *make_source(const char *name, GstCaps *caps) {
    GstElement *source = gst_element_factory_make("appsrc", name);
    if (!source) return NULL;
    // Live, stamped by the caller; never blocking the service's encoder
    // threads: past 2 MB queued (a stalled pipeline), the oldest go.
    g_object_set(source, "caps", caps, "is-live", TRUE, "format", GST_FORMAT_TIME, "do-timestamp", FALSE,
                 "block", FALSE, "max-bytes", (guint64)(2 << 20), NULL);
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(source), "leaky-type"))
        gst_util_set_object_arg(G_OBJECT(source), "leaky-type", "downstream");
    return source;
}

static void configure_ice(cw_peer *peer, const cw_config *config) {
    if (config->stun_server && *config->stun_server) g_object_set(peer->webrtc, "stun-server", config->stun_server, NULL);
    for (int index = 0; index < config->turn_count; index++) {
        gboolean added = FALSE;
        g_signal_emit_by_name(peer->webrtc, "add-turn-server", config->turn_servers[index], &added);
    }
    GObject *ice = NULL;
    g_object_get(peer->webrtc, "ice-agent", &ice, NULL);
    if (!ice) return;
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "ice-tcp")) g_object_set(ice, "ice-tcp", FALSE, NULL);
    if (config->max_port > 0) g_object_set(ice, "max-rtp-port", config->max_port, "min-rtp-port", config->min_port, NULL);
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "agent")) {
        NiceAgent *agent = NULL;
        g_object_get(ice, "agent", &agent, NULL);
        // No UPnP: libnice would otherwise look for an internet gateway with SSDP multicasts on
        // every network and ask it to open ports, where media is to leave from the listening
        // address alone.
        if (agent && g_object_class_find_property(G_OBJECT_GET_CLASS(agent), "upnp")) g_object_set(agent, "upnp", FALSE, NULL);
        for (int index = 0; agent && index < config->address_count; index++) {
            NiceAddress address;
            nice_address_init(&address);
            if (nice_address_set_from_string(&address, config->addresses[index])) nice_agent_add_local_address(agent, &address);
        }
        if (agent) g_object_unref(agent);
    }
    g_object_unref(ice);
}

/// Sets the payloaders to the payload types webrtcbin chose among the offer's.
/// FALSE when the answer sends no video (no section, port 0, or inactive).
static gboolean follow_answer(cw_peer *peer, GstElement *video_payloader, GstElement *audio_payloader, const GstSDPMessage *answer) {
    gboolean sends_video = FALSE;
    for (guint index = 0; index < gst_sdp_message_medias_len(answer); index++) {
        const GstSDPMedia *media = gst_sdp_message_get_media(answer, index);
        const char *kind = gst_sdp_media_get_media(media);
        if (gst_sdp_media_get_port(media) == 0 || gst_sdp_media_formats_len(media) == 0) continue;
        if (gst_sdp_media_get_attribute_val(media, "inactive") || gst_sdp_media_get_attribute_val(media, "recvonly")) continue;
        int payload = atoi(gst_sdp_media_get_format(media, 0));
        if (g_strcmp0(kind, "video") == 0 && !sends_video) {
            sends_video = TRUE;
            g_object_set(video_payloader, "pt", (guint)payload, NULL);
        } else if (g_strcmp0(kind, "audio") == 0 && audio_payloader) {
            g_object_set(audio_payloader, "pt", (guint)payload, NULL);
        }
    }
    return sends_video;
}

cw_peer *cw_peer_create(const char *offer, const cw_config *config, char **answer, char **error, int *refused) {
    *answer = NULL;
    *error = NULL;
    *refused = 0;
    GstSDPMessage *message = NULL;
    if (gst_sdp_message_new_from_text(offer, &message) != GST_SDP_OK || gst_sdp_message_medias_len(message) == 0) {
        if (message) gst_sdp_message_free(message);
        *refused = 1;
        *error = g_strdup("the offer is not an SDP description with media");
        return NULL;
    }
    GstCaps *video_caps = NULL, *audio_caps = NULL;
    int video_payload = -1, audio_payload = -1;
    for (guint index = 0; index < gst_sdp_message_medias_len(message); index++) {
        const GstSDPMedia *media = gst_sdp_message_get_media(message, index);
        const char *kind = gst_sdp_media_get_media(media);
        if (video_payload < 0 && g_strcmp0(kind, "video") == 0) {
            video_payload = choose_h264(media, &video_caps);
            if (video_payload >= 0) keep_only((GstSDPMedia *)media, video_payload);
        }
        if (audio_payload < 0 && g_strcmp0(kind, "audio") == 0) audio_payload = choose_opus(media, &audio_caps);
    }
    if (video_payload < 0) {
        gst_sdp_message_free(message);
        if (audio_caps) gst_caps_unref(audio_caps);
        *refused = 1;
        *error = g_strdup("the offer takes no H.264 video (packetization-mode 1), which is what the service sends");
        return NULL;
    }
    as_preference(video_caps, "video");
    const char *offered_profile = gst_structure_get_string(gst_caps_get_structure(video_caps, 0), "profile");
    gboolean with_audio = config->with_audio && audio_payload >= 0;
    if (audio_caps) as_preference(audio_caps, "audio");

    cw_peer *peer = g_new0(cw_peer, 1);
    g_strlcpy(peer->profile, offered_profile ? offered_profile : "constrained-baseline", sizeof peer->profile);
    peer->pipeline = gst_pipeline_new(NULL);
    // The system clock runs on CLOCK_MONOTONIC, the capture clock: with base
    // time 0 a packet's capture time is its running time, so that audio and
    // video keep the alignment they were captured with.
    GstClock *clock = gst_system_clock_obtain();
    g_object_set(clock, "clock-type", GST_CLOCK_TYPE_MONOTONIC, NULL);
    gst_pipeline_use_clock(GST_PIPELINE(peer->pipeline), clock);
    gst_object_unref(clock);
    peer->webrtc = gst_element_factory_make("webrtcbin", "webrtc");
    gst_bin_add(GST_BIN(peer->pipeline), peer->webrtc);
    gst_util_set_object_arg(G_OBJECT(peer->webrtc), "bundle-policy", "max-bundle");
    configure_ice(peer, config);
    // Sender reports pair NTP time with the RTP time of the capture clock now, from each
    // packet's capture time (its running time): audio and video are reported on one timeline,
    // so a player aligns them as they were captured. (Webrtcbin's default, the send time,
    // needs a latency its pipeline never configures here: every report then went out with an
    // RTP time as far off as the running time, a different error for each stream.)
    GstElement *rtpbin = gst_bin_get_by_name(GST_BIN(peer->webrtc), "rtpbin");
    if (rtpbin) {
        g_object_set(rtpbin, "rtcp-sync-send-time", FALSE, NULL);
        gst_object_unref(rtpbin);
    } else {
        g_warning("capctl: webrtcbin has no rtpbin: its sender reports keep the send time");
    }

    // The shared encoder makes High profile, as the recordings have it; the
    // stream is labelled with the profile of the offer's codec chosen (High
    // when offered), which browsers decode it under, as they do from other
    // servers of cameras' H.264.
    GstCaps *h264 = gst_caps_new_simple("video/x-h264", "stream-format", G_TYPE_STRING, "byte-stream", "alignment", G_TYPE_STRING, "au",
                                        "profile", G_TYPE_STRING, peer->profile, NULL);
    peer->video = make_source("video", h264);
    gst_caps_unref(h264);
    GstElement *video_payloader = gst_element_factory_make("rtph264pay", NULL);
    GstElement *audio_payloader = NULL;
    g_object_set(video_payloader, "pt", (guint)video_payload, "config-interval", -1, "mtu", 1200, NULL);
    gst_util_set_object_arg(G_OBJECT(video_payloader), "aggregate-mode", "zero-latency");
    gboolean built = add_branch(peer, peer->video, video_payloader, video_caps);
    if (built && with_audio) {
        char *opus = g_strdup_printf("audio/x-opus,rate=48000,channels=%d,channel-mapping-family=0", config->audio_channels == 1 ? 1 : 2);
        GstCaps *opus_caps = gst_caps_from_string(opus);
        g_free(opus);
        peer->audio = make_source("audio", opus_caps);
        gst_caps_unref(opus_caps);
        audio_payloader = gst_element_factory_make("rtpopuspay", NULL);
        g_object_set(audio_payloader, "pt", (guint)audio_payload, "mtu", 1200, NULL);
        built = add_branch(peer, peer->audio, audio_payloader, audio_caps);
    }
    gst_caps_unref(video_caps);
    if (audio_caps) gst_caps_unref(audio_caps);
    if (!built) {
        gst_sdp_message_free(message);
        *error = g_strdup("cannot link the payloaders to webrtcbin");
        cw_peer_destroy(peer);
        return NULL;
    }
    GstPad *video_output = gst_element_get_static_pad(peer->video, "src");
    gst_pad_add_probe(video_output, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_upstream_event, peer, NULL);
    gst_object_unref(video_output);

    // Running time is the capture clock itself: base time 0, kept so (no start time), and a
    // packet's capture time is its running time.
    gst_element_set_start_time(peer->pipeline, GST_CLOCK_TIME_NONE);
    gst_element_set_base_time(peer->pipeline, 0);
    // For measurements only (scripts/bench webrtc): RTP timestamps on the capture clock (ticks
    // of CLOCK_MONOTONIC from 0, 90 kHz for video, 48 kHz for audio), so that a player can tell
    // each frame's and each sound's capture time. Otherwise they start at random, as RTP wants.
    const char *clock_mode = g_getenv("CAPCTL_WEBRTC_RTP_CLOCK");
    if (clock_mode && strcmp(clock_mode, "capture") == 0) {
        g_object_set(video_payloader, "timestamp-offset", 0u, NULL);
        if (audio_payloader) g_object_set(audio_payloader, "timestamp-offset", 0u, NULL);
    }
    if (gst_element_set_state(peer->pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        gst_sdp_message_free(message);
        *error = g_strdup("the WebRTC pipeline does not start");
        cw_peer_destroy(peer);
        return NULL;
    }
    peer->base_time = gst_element_get_base_time(peer->pipeline);

    promise_waiter *waiter;
    GstWebRTCSessionDescription *remote = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, message);
    GstPromise *promise = timed_promise(&waiter);
    g_signal_emit_by_name(peer->webrtc, "set-remote-description", remote, promise);
    gst_webrtc_session_description_free(remote);
    *error = outcome(promise, waiter, "the offer", NULL);
    gst_promise_unref(promise);
    if (*error) {
        *refused = 1;
        cw_peer_destroy(peer);
        return NULL;
    }

    promise = timed_promise(&waiter);
    g_signal_emit_by_name(peer->webrtc, "create-answer", NULL, promise);
    const GstStructure *reply = NULL;
    *error = outcome(promise, waiter, "the answer", &reply);
    GstWebRTCSessionDescription *local = NULL;
    if (!*error && reply) gst_structure_get(reply, "answer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &local, NULL);
    gst_promise_unref(promise);
    if (!local) {
        if (!*error) *error = g_strdup("webrtcbin made no answer");
        cw_peer_destroy(peer);
        return NULL;
    }
    if (!follow_answer(peer, video_payloader, audio_payloader, local->sdp)) {
        gst_webrtc_session_description_free(local);
        *refused = 1;
        *error = g_strdup("no video section of the offer can receive the service's H.264");
        cw_peer_destroy(peer);
        return NULL;
    }
    promise = timed_promise(&waiter);
    g_signal_emit_by_name(peer->webrtc, "set-local-description", local, promise);
    gst_webrtc_session_description_free(local);
    *error = outcome(promise, waiter, "the answer", NULL);
    gst_promise_unref(promise);
    if (*error) {
        cw_peer_destroy(peer);
        return NULL;
    }

    // WHEP answers once, with every candidate: wait for gathering to end (a
    // few milliseconds on a LAN; a STUN or TURN server can take longer).
    gint64 end = g_get_monotonic_time() + (gint64)config->gathering_timeout_ms * G_TIME_SPAN_MILLISECOND;
    for (;;) {
        GstWebRTCICEGatheringState state = GST_WEBRTC_ICE_GATHERING_STATE_NEW;
        g_object_get(peer->webrtc, "ice-gathering-state", &state, NULL);
        if (state == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE || g_get_monotonic_time() >= end) break;
        g_usleep(5000);
    }
    GstWebRTCSessionDescription *described = NULL;
    g_object_get(peer->webrtc, "local-description", &described, NULL);
    if (!described) {
        *error = g_strdup("webrtcbin has no local description");
        cw_peer_destroy(peer);
        return NULL;
    }
    *answer = gst_sdp_message_as_text(described->sdp);
    gst_webrtc_session_description_free(described);
    return peer;
}

// MARK: Media

static void push(GstElement *source, GstClockTime base, const void *data, size_t size, int64_t pts_ns, int64_t duration_ns, gboolean delta) {
    if (!source || size == 0) return;
    GstBuffer *buffer = gst_buffer_new_memdup(data, size);
    // Running time of the capture (a packet from before the viewer joined starts at zero).
    GST_BUFFER_PTS(buffer) = (GstClockTime)pts_ns > base ? (GstClockTime)pts_ns - base : 0;
    GST_BUFFER_DTS(buffer) = GST_BUFFER_PTS(buffer);
    if (duration_ns > 0) GST_BUFFER_DURATION(buffer) = (GstClockTime)duration_ns;
    if (delta) GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT);
    gst_app_src_push_buffer(GST_APP_SRC(source), buffer);
}

void cw_peer_push_video(cw_peer *peer, const void *data, size_t size, int64_t pts_ns, int keyframe) {
    push(peer->video, peer->base_time, data, size, pts_ns, 0, !keyframe);
}

void cw_peer_push_audio(cw_peer *peer, const void *data, size_t size, int64_t pts_ns, int64_t duration_ns) {
    push(peer->audio, peer->base_time, data, size, pts_ns, duration_ns, FALSE);
}

int cw_peer_take_keyframe_request(cw_peer *peer) {
    return g_atomic_int_compare_and_exchange(&peer->keyframe_requests, 1, 0) ? 1 : 0;
}

int cw_peer_connection_state(cw_peer *peer) {
    GstWebRTCPeerConnectionState state = GST_WEBRTC_PEER_CONNECTION_STATE_NEW;
    g_object_get(peer->webrtc, "connection-state", &state, NULL);
    return (int)state;
}

// MARK: Statistics

static gboolean read_number(const GstStructure *structure, const char *field, GType type, GValue *out) {
    const GValue *value = gst_structure_get_value(structure, field);
    if (!value) return FALSE;
    g_value_init(out, type);
    if (!g_value_type_transformable(G_VALUE_TYPE(value), type) || !g_value_transform(value, out)) {
        g_value_unset(out);
        return FALSE;
    }
    return TRUE;
}

static gboolean add_stats(GQuark field, const GValue *value, gpointer data) {
    (void)field;
    cw_stats *stats = data;
    if (!GST_VALUE_HOLDS_STRUCTURE(value)) return TRUE;
    const GstStructure *entry = gst_value_get_structure(value);
    GstWebRTCStatsType type = 0;
    if (!gst_structure_get(entry, "type", GST_TYPE_WEBRTC_STATS_TYPE, &type, NULL)) return TRUE;
    GValue number = G_VALUE_INIT;
    if (type == GST_WEBRTC_STATS_OUTBOUND_RTP) {
        if (read_number(entry, "bytes-sent", G_TYPE_UINT64, &number)) { stats->bytes_sent += g_value_get_uint64(&number); g_value_unset(&number); }
        if (read_number(entry, "packets-sent", G_TYPE_UINT64, &number)) { stats->packets_sent += g_value_get_uint64(&number); g_value_unset(&number); }
    } else if (type == GST_WEBRTC_STATS_REMOTE_INBOUND_RTP) {
        if (read_number(entry, "packets-lost", G_TYPE_INT64, &number)) { stats->packets_lost += g_value_get_int64(&number); g_value_unset(&number); }
        if (read_number(entry, "round-trip-time", G_TYPE_DOUBLE, &number)) {
            double seconds = g_value_get_double(&number);
            g_value_unset(&number);
            if (seconds > 0 && (!stats->has_round_trip || seconds > stats->round_trip_seconds)) {
                stats->round_trip_seconds = seconds;
                stats->has_round_trip = 1;
            }
        }
        // The RTP session's own view of the viewer's last receiver report:
        // the highest sequence number it has had, and whether it said BYE.
        GstStructure *source = NULL;
        if (gst_structure_get(entry, "gst-rtpsource-stats", GST_TYPE_STRUCTURE, &source, NULL) && source) {
            guint highest = 0;
            gboolean bye = FALSE;
            if (gst_structure_get_uint(source, "rb-exthighestseq", &highest)) stats->highest_received += highest;
            if (gst_structure_get_boolean(source, "received-bye", &bye) && bye) stats->said_bye = 1;
            gst_structure_free(source);
        }
    }
    return TRUE;
}

int cw_peer_stats(cw_peer *peer, cw_stats *stats, int timeout_ms) {
    memset(stats, 0, sizeof *stats);
    promise_waiter *waiter;
    GstPromise *promise = timed_promise(&waiter);
    g_signal_emit_by_name(peer->webrtc, "get-stats", NULL, promise);
    const GstStructure *reply = NULL;
    gboolean answered = await_reply(promise, waiter, timeout_ms, &reply);
    gboolean usable = answered && reply && !gst_structure_has_field(reply, "error");
    if (usable) gst_structure_foreach(reply, add_stats, stats);
    gst_promise_unref(promise);
    return usable ? 0 : -1;
}

void cw_peer_destroy(cw_peer *peer) {
    if (!peer) return;
    if (peer->pipeline) {
        gst_element_set_state(peer->pipeline, GST_STATE_NULL);
        gst_object_unref(peer->pipeline);
    }
    g_free(peer);
}

void cw_free(void *pointer) { g_free(pointer); }
