// FFmpeg's libraries, in the order they are loaded (each after the ones it
// needs), with the file each is loaded from: the soname of the major version
// capctl was compiled against, so that a library with another ABI is never
// picked up. The includer defines CAPCTL_FFMPEG_LIBRARY(NAME, SONAME, PACKAGE),
// PACKAGE being the Debian package that installs the library (named after
// the soname, as Debian names shared library packages).

#include <libavutil/version.h>
#include <libavcodec/version_major.h>
#include <libavformat/version_major.h>
#include <libswscale/version_major.h>
#include <libswresample/version_major.h>

#define CAPCTL_FFMPEG_STRING(x) CAPCTL_FFMPEG_STRING_(x)
#define CAPCTL_FFMPEG_STRING_(x) #x

CAPCTL_FFMPEG_LIBRARY(avutil, "libavutil.so." CAPCTL_FFMPEG_STRING(LIBAVUTIL_VERSION_MAJOR),
                      "libavutil" CAPCTL_FFMPEG_STRING(LIBAVUTIL_VERSION_MAJOR))
CAPCTL_FFMPEG_LIBRARY(swresample, "libswresample.so." CAPCTL_FFMPEG_STRING(LIBSWRESAMPLE_VERSION_MAJOR),
                      "libswresample" CAPCTL_FFMPEG_STRING(LIBSWRESAMPLE_VERSION_MAJOR))
CAPCTL_FFMPEG_LIBRARY(swscale, "libswscale.so." CAPCTL_FFMPEG_STRING(LIBSWSCALE_VERSION_MAJOR),
                      "libswscale" CAPCTL_FFMPEG_STRING(LIBSWSCALE_VERSION_MAJOR))
CAPCTL_FFMPEG_LIBRARY(avcodec, "libavcodec.so." CAPCTL_FFMPEG_STRING(LIBAVCODEC_VERSION_MAJOR),
                      "libavcodec" CAPCTL_FFMPEG_STRING(LIBAVCODEC_VERSION_MAJOR))
CAPCTL_FFMPEG_LIBRARY(avformat, "libavformat.so." CAPCTL_FFMPEG_STRING(LIBAVFORMAT_VERSION_MAJOR),
                      "libavformat" CAPCTL_FFMPEG_STRING(LIBAVFORMAT_VERSION_MAJOR))
