#pragma once
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavutil/log.h>
#include <libavutil/pixfmt.h>

/* libavcodec's HEVC decoder for compress's HEIF path (measured 0.66-0.72x libde265's CPU
   on IMG_5195.HEIC's tiles, one thread each). Its error codes are function-like macros,
   which Swift does not import: one inline function each. */
static inline int pm_av_eagain(void) { return AVERROR(EAGAIN); }
static inline int pm_av_eof(void) { return AVERROR_EOF; }
