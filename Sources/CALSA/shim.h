#ifndef CAPCTL_CALSA_SHIM_H
#define CAPCTL_CALSA_SHIM_H

#include <alsa/asoundlib.h>

// alsa-lib prints its own messages on stderr ("ALSA lib pcm.c: Unknown PCM
// …") for errors it also returns; capctl reports those itself, one line each,
// so it installs this handler. It must be a variadic C function, which Swift
// cannot define.
static void calsa_quiet_error_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void calsa_silence_library_errors(void) {
    snd_lib_error_set_handler(calsa_quiet_error_handler);
}

// SND_PCM_NONBLOCK is a macro; opening for probing must never wait for a
// device another process holds.
static const int calsa_PCM_NONBLOCK = SND_PCM_NONBLOCK;

#endif
