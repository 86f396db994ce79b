// CFFmpegLoader has no interface of its own: it defines FFmpeg's functions
// themselves (see functions.h), which Swift calls through CFFmpeg's headers.
// This header exists so that the target has the public-header folder the
// package manager expects (a folder git would not keep empty).
#ifndef CFFMPEG_LOADER_H
#define CFFMPEG_LOADER_H
#endif
