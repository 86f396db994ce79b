// Defines every FFmpeg function capctl calls (functions.h) as a forwarder to
// the real one, which loader.c finds, loading FFmpeg's libraries on the first
// call of any of them. Swift code calls FFmpeg as it always did: the names
// it imports from the CFFmpeg module resolve to these definitions at link
// time. They are hidden, so that FFmpeg's libraries, once loaded, call each
// other directly and never through them.
//
// The cost of a call after the first: one atomic load and an indirect call.
#include "loader.h"

#include <stdatomic.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
#include <libavutil/parseutils.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

// The real function's address, looked up on the first call. Several threads
// may look it up at once; they all store the same address.
#define CAPCTL_FFMPEG_ADDRESS(library, name)                                              \
    static _Atomic(void *) address;                                                       \
    void *real = atomic_load_explicit(&address, memory_order_acquire);                    \
    if (real == NULL) {                                                                   \
        real = capctl_ffmpeg_symbol(capctl_ffmpeg_##library, #name);                      \
        atomic_store_explicit(&address, real, memory_order_release);                      \
    }

// The definition repeats FFmpeg's declaration (the compiler rejects one that
// differs), and the call goes through a pointer of the declared type.
#define CAPCTL_FFMPEG_FUNCTION(library, type, name, parameters, arguments)                \
    __attribute__((visibility("hidden"))) type name parameters {                          \
        CAPCTL_FFMPEG_ADDRESS(library, name)                                              \
        return ((__typeof__(&name))real) arguments;                                       \
    }
#define CAPCTL_FFMPEG_VOID(library, name, parameters, arguments)                          \
    __attribute__((visibility("hidden"))) void name parameters {                          \
        CAPCTL_FFMPEG_ADDRESS(library, name)                                              \
        ((__typeof__(&name))real) arguments;                                              \
    }

#include "functions.h"
