// GStreamer's WebRTC element and libnice, for the CWebRTCPeer glue: this
// module brings their compiler and linker flags (pkg-config); Swift code
// calls the glue, not these headers.
#include <gst/gst.h>
