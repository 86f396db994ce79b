// FFmpeg's log, routed away from stderr. libavcodec, libswscale and the
// encoders write warnings ("deprecated pixel format used", x264's settings)
// straight to stderr from inside library calls, which a library must not
// do to its program. This installs, when the libraries are loaded, a log
// callback that hands each line to the sink CaptureKit sets (its logging
// handler) or drops it. The callback is C because FFmpeg passes a va_list.
#include "loader.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include "include/CFFmpegLoader.h"

static _Atomic(capctl_ffmpeg_log_sink) sink = NULL;

void capctl_ffmpeg_set_log_sink(capctl_ffmpeg_log_sink new_sink) {
    atomic_store(&sink, new_sink);
}

typedef int (*get_level_function)(void);
typedef int (*format_line_function)(void *, int, const char *, va_list, char *, int, int *);
static get_level_function get_level;
static format_line_function format_line;

static void capctl_ffmpeg_log(void *context, int level, const char *format, va_list arguments) {
    capctl_ffmpeg_log_sink current = atomic_load(&sink);
    if (current == NULL || level > get_level()) return;
    char line[1024];
    int prefix = 1;
    if (format_line(context, level, format, arguments, line, sizeof line, &prefix) < 0) return;
    current(level, line);
}

void capctl_ffmpeg_install_log(void *get_level_address, void *format_line_address, void *set_callback_address) {
    typedef void (*set_callback_function)(void (*)(void *, int, const char *, va_list));
    // An FFmpeg without them keeps its own log (on stderr).
    if (get_level_address == NULL || format_line_address == NULL || set_callback_address == NULL) return;
    get_level = (get_level_function)get_level_address;
    format_line = (format_line_function)format_line_address;
    ((set_callback_function)set_callback_address)(capctl_ffmpeg_log);
}
