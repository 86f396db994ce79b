#ifndef CAPCTL_FFMPEG_LOADER_H
#define CAPCTL_FFMPEG_LOADER_H

// What trampolines.c needs from loader.c: FFmpeg's libraries by name, and
// the address of a function in one of them.

enum capctl_ffmpeg_library {
#define CAPCTL_FFMPEG_LIBRARY(name, soname, package) capctl_ffmpeg_##name,
#include "libraries.h"
#undef CAPCTL_FFMPEG_LIBRARY
    capctl_ffmpeg_library_count
};

/// The address of `name` in `library`. The first call loads all of FFmpeg's
/// libraries. When a library cannot be loaded or lacks the symbol, it writes
/// one line on stderr naming the library and the package that installs it,
/// and ends the process with status 69 (unavailable): a trampoline has no
/// other way to fail, and the caller could not go on without the function.
__attribute__((visibility("hidden")))
void *capctl_ffmpeg_symbol(enum capctl_ffmpeg_library library, const char *name);

/// Routes FFmpeg's log through log.c's sink (nowhere until one is set).
/// Called once, when the libraries are loaded.
__attribute__((visibility("hidden")))
void capctl_ffmpeg_install_log(void *get_level, void *format_line, void *set_callback);

#endif
