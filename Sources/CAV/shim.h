#ifndef ALBUMFS_CAV_SHIM_H
#define ALBUMFS_CAV_SHIM_H
// FFmpeg: video metadata (libavformat) and one decoded frame for thumbnails.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libswscale/swscale.h>

static inline int shim_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int64_t shim_av_nopts_value(void) { return AV_NOPTS_VALUE; }

// Clockwise rotation in degrees (0, 90, 180, 270) that makes the stream upright,
// from its display matrix; 0 when there is none.
static inline int shim_stream_rotation_cw(AVStream *stream) {
    const uint8_t *matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, NULL);
    if (!matrix) return 0;
    double ccw = av_display_rotation_get((const int32_t *)matrix);
    if (ccw != ccw) return 0; // NaN
    int cw = (int)(-ccw + (ccw > 0 ? -0.5 : 0.5));
    cw %= 360;
    if (cw < 0) cw += 360;
    return ((cw + 45) / 90 * 90) % 360;
}

static inline const char *shim_dict_get(AVDictionary *dict, const char *key) {
    AVDictionaryEntry *entry = av_dict_get(dict, key, NULL, 0);
    return entry ? entry->value : NULL;
}
#endif
