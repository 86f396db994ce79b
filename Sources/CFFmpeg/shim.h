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

// Writer and playback additions.
// libswresample converts audio to the sample format, rate and channel layout
// an encoder takes; the audio FIFO regroups samples into encoder-sized frames.
#include <libswresample/swresample.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/pixdesc.h>
#include <libavutil/mathematics.h>
#include <libavutil/samplefmt.h>
#include <libavutil/parseutils.h>
// A track's display matrix: the rotation and mirroring a connection asks for.
#include <libavutil/display.h>

// More FFERRTAG error codes the writer and player tell apart; like the ones
// above, Swift cannot evaluate the macros that build them.
static const int cffmpeg_AVERROR_INVALIDDATA = AVERROR_INVALIDDATA;
static const int cffmpeg_AVERROR_ENCODER_NOT_FOUND = AVERROR_ENCODER_NOT_FOUND;
static const int cffmpeg_AVERROR_DECODER_NOT_FOUND = AVERROR_DECODER_NOT_FOUND;
static const int cffmpeg_AVERROR_STREAM_NOT_FOUND = AVERROR_STREAM_NOT_FOUND;
static const int cffmpeg_AVERROR_PATCHWELCOME = AVERROR_PATCHWELCOME;
// What a network call returns when the interrupt callback ends it (a
// stream's deadline passed, or it was stopped).
static const int cffmpeg_AVERROR_EXIT = AVERROR_EXIT;

// AVERROR(e) negates errno values on Linux; a function form for Swift, used
// by the custom I/O callbacks to report a failed write or seek.
static inline int cffmpeg_averror(int errnum) { return AVERROR(errnum); }

// A chapter for a muxer that writes chapters at the trailer (Matroska, WebM):
// libavformat's own avpriv_new_chapter is private, so the AVChapter is made
// here, with its title, and appended to the context's list, which
// avformat_free_context frees. Returns 0, or AVERROR(ENOMEM).
static inline int cffmpeg_add_chapter(AVFormatContext *context, int64_t id, AVRational time_base, int64_t start, int64_t end,
                                      const char *title) {
    AVChapter *chapter = av_mallocz(sizeof(AVChapter));
    if (!chapter) return AVERROR(ENOMEM);
    chapter->id = id;
    chapter->time_base = time_base;
    chapter->start = start;
    chapter->end = end;
    if (av_dict_set(&chapter->metadata, "title", title, 0) < 0) {
        av_free(chapter);
        return AVERROR(ENOMEM);
    }
    int count = (int)context->nb_chapters;
    if (av_dynarray_add_nofree(&context->chapters, &count, chapter) < 0) {
        av_dict_free(&chapter->metadata);
        av_free(chapter);
        return AVERROR(ENOMEM);
    }
    context->nb_chapters = (unsigned int)count;
    return 0;
}

#endif
