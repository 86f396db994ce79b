// CFFmpegLoader defines FFmpeg's functions themselves (see functions.h),
// which Swift calls through CFFmpeg's headers; its one interface of its own
// is where FFmpeg's log goes (log.c).
#ifndef CFFMPEG_LOADER_H
#define CFFMPEG_LOADER_H

/// Receives one formatted line of FFmpeg's log at an AV_LOG_* level.
typedef void (*capctl_ffmpeg_log_sink)(int level, const char *line);

/// Sets where FFmpeg's log lines go (log.c): to `sink`, or nowhere when
/// NULL (the default). Lines above av_log_get_level() are not formatted.
void capctl_ffmpeg_set_log_sink(capctl_ffmpeg_log_sink sink);

#endif
