// Loads FFmpeg's libraries when capctl first calls one of their functions,
// instead of when the program starts.
//
// Why: libavcodec alone brings in some hundred codec and system libraries;
// loading and relocating them costs tens of milliseconds and tens of MiB at
// every start, which commands that never read or write a media file
// (list-devices, formats, controls, set, monitor, --help, --version) should
// not pay. The executable has no DT_NEEDED entry for any of them; every FFmpeg
// function it calls is a forwarder (trampolines.c) that asks this file for the
// real one.
#define _GNU_SOURCE
#include "loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static const struct {
    const char *soname;
    const char *package;
} libraries[capctl_ffmpeg_library_count] = {
#define CAPCTL_FFMPEG_LIBRARY(name, soname, package) [capctl_ffmpeg_##name] = {soname, package},
#include "libraries.h"
#undef CAPCTL_FFMPEG_LIBRARY
};

// Written once, under `loaded`; read after it by every thread.
static void *handles[capctl_ffmpeg_library_count];
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

// EX_UNAVAILABLE: a support file the command needs does not exist.
enum { capctl_ffmpeg_exit_unavailable = 69 };

__attribute__((noreturn)) static void capctl_ffmpeg_fail(const char *what, const char *package) {
    // One line, the way capctl reports errors; _exit because this may run on
    // any thread, in the middle of any FFmpeg call, where atexit handlers and
    // Swift's runtime must not run.
    dprintf(STDERR_FILENO, "%s: error: %s; FFmpeg's libraries are needed to read and write media files: install %s\n",
            program_invocation_short_name, what, package);
    _exit(capctl_ffmpeg_exit_unavailable);
}

static void capctl_ffmpeg_load_all(void) {
    for (int library = 0; library < capctl_ffmpeg_library_count; library++) {
        // RTLD_NOW: a library that lacks what it needs fails here, with
        // dlerror's explanation, rather than in the middle of a recording.
        // RTLD_LOCAL: functions are looked up in their own library's handle.
        handles[library] = dlopen(libraries[library].soname, RTLD_NOW | RTLD_LOCAL);
        if (handles[library] == NULL) {
            capctl_ffmpeg_fail(dlerror(), libraries[library].package);
        }
    }
    // Looked up here, inside the one-time load (capctl_ffmpeg_symbol would wait for it).
    void *avutil = handles[capctl_ffmpeg_avutil];
    capctl_ffmpeg_install_log(dlsym(avutil, "av_log_get_level"), dlsym(avutil, "av_log_format_line2"), dlsym(avutil, "av_log_set_callback"));
}

void *capctl_ffmpeg_symbol(enum capctl_ffmpeg_library library, const char *name) {
    pthread_once(&loaded, capctl_ffmpeg_load_all);
    dlerror();
    void *address = dlsym(handles[library], name);
    if (address == NULL) {
        char what[256];
        snprintf(what, sizeof what, "%s has no function %s (an older version?)", libraries[library].soname, name);
        capctl_ffmpeg_fail(what, libraries[library].package);
    }
    return address;
}
