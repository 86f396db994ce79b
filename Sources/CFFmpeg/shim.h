#ifndef CAPCTL_CFFMPEG_SHIM_H
#define CAPCTL_CFFMPEG_SHIM_H

// FFmpeg for Swift. Error codes such as AVERROR_EOF and AVERROR(EAGAIN) are
// macros built from FFERRTAG and negation, which Swift does not evaluate, so
// the ones the writer and player test for are re-exported with a prefix.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libswscale/swscale.h>
#include <errno.h>

static const int cffmpeg_AVERROR_EOF = AVERROR_EOF;
static const int cffmpeg_AVERROR_EAGAIN = AVERROR(EAGAIN);
static const int64_t cffmpeg_AV_NOPTS_VALUE = AV_NOPTS_VALUE;

#endif
