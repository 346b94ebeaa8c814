#ifndef ALBUMFS_CVIPS_SHIM_H
#define ALBUMFS_CVIPS_SHIM_H
// libvips (decode, headers, thumbnails), libexif (typed reads of the EXIF block that
// libvips hands out) and libheif (the stored, un-rotated size of HEIF images).
#include <vips/vips.h>
#include <libexif/exif-data.h>
#include <libexif/exif-utils.h>
#include <libheif/heif.h>

// --- libvips: its API is variadic (option lists ending in NULL) -------------------

// Opens only the header; pixels are decoded lazily, so this is cheap.
static inline VipsImage *shim_vips_open_header(const char *path) {
    return vips_image_new_from_file(path, "access", VIPS_ACCESS_SEQUENTIAL, NULL);
}

// Shrink-on-load thumbnail, upright by EXIF orientation, never enlarged.
static inline int shim_vips_thumbnail(const char *path, int size, VipsImage **out) {
    return vips_thumbnail(path, out, size, "height", size, "size", VIPS_SIZE_DOWN,
                          "export_profile", "srgb", NULL);
}

static inline int shim_vips_autorot(VipsImage *in, VipsImage **out) {
    return vips_autorot(in, out, NULL);
}

static inline int shim_vips_thumbnail_image(VipsImage *in, int size, VipsImage **out) {
    return vips_thumbnail_image(in, out, size, "height", size, "size", VIPS_SIZE_DOWN, NULL);
}

static inline int shim_vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "strip", TRUE,
                                "optimize_coding", TRUE, NULL);
}

static inline int shim_vips_rot(VipsImage *in, VipsImage **out, int degrees_cw) {
    VipsAngle angle = VIPS_ANGLE_D0;
    if (degrees_cw == 90) angle = VIPS_ANGLE_D90;
    else if (degrees_cw == 180) angle = VIPS_ANGLE_D180;
    else if (degrees_cw == 270) angle = VIPS_ANGLE_D270;
    return vips_rot(in, out, angle, NULL);
}

static inline int shim_vips_image_get_int(VipsImage *image, const char *name, int *out) {
    if (vips_image_get_typeof(image, name) == 0) return -1;
    return vips_image_get_int(image, name, out);
}

// The raw EXIF block (TIFF structure after an "Exif\0\0" header), if the loader found one.
static inline int shim_vips_exif_blob(VipsImage *image, const void **data, size_t *length) {
    if (vips_image_get_typeof(image, VIPS_META_EXIF_NAME) == 0) return -1;
    return vips_image_get_blob(image, VIPS_META_EXIF_NAME, data, length);
}

static inline void shim_g_object_unref(void *object) { g_object_unref(object); }

// A synthetic test or benchmark image: a gradient with some noise, so that it
// compresses like a photo.
static inline VipsImage *shim_vips_test_image(int width, int height, double sigma) {
    VipsImage *xyz = NULL, *noise = NULL, *sum = NULL, *rgb = NULL, *out = NULL;
    if (vips_xyz(&xyz, width, height, NULL)) return NULL;
    if (vips_gaussnoise(&noise, width, height, "sigma", sigma, "mean", 128.0, NULL)) { g_object_unref(xyz); return NULL; }
    VipsImage *x = NULL;
    vips_extract_band(xyz, &x, 0, NULL);
    double scale = 255.0 / (width > 1 ? width : 1);
    VipsImage *xs = NULL;
    vips_linear1(x, &xs, scale, 0.0, NULL);
    vips_add(xs, noise, &sum, NULL);
    VipsImage *bands[3] = { sum, noise, xs };
    vips_bandjoin(bands, &rgb, 3, NULL);
    vips_cast_uchar(rgb, &out, NULL);
    g_object_unref(xyz); g_object_unref(noise); g_object_unref(x); g_object_unref(xs);
    g_object_unref(sum); g_object_unref(rgb);
    if (out) vips_image_set_int(out, "orientation", 1);
    return out;
}

static inline int shim_vips_jpegsave_file(VipsImage *in, const char *path, int quality) {
    return vips_jpegsave(in, path, "Q", quality, NULL);
}

static inline int shim_vips_heifsave_file(VipsImage *in, const char *path, int quality) {
    return vips_heifsave(in, path, "Q", quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_HEVC, NULL);
}

static inline int shim_vips_pngsave_file(VipsImage *in, const char *path) {
    return vips_pngsave(in, path, NULL);
}

static inline VipsImage *shim_vips_copy(VipsImage *in) {
    VipsImage *out = NULL;
    if (vips_copy(in, &out, NULL)) return NULL;
    return out;
}

// --- libexif --------------------------------------------------------------------

// A parser that reports what is in the block and nothing more: libexif's defaults
// would add mandatory tags with made-up values.
static inline ExifData *shim_exif_parse(const unsigned char *data, unsigned int length) {
    ExifData *exif = exif_data_new();
    if (!exif) return NULL;
    exif_data_unset_option(exif, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
    exif_data_unset_option(exif, EXIF_DATA_OPTION_IGNORE_UNKNOWN_TAGS);
    exif_data_load_data(exif, data, length);
    return exif;
}

static inline ExifEntry *shim_exif_entry(ExifData *exif, int ifd, int tag) {
    if (!exif || ifd < 0 || ifd >= EXIF_IFD_COUNT || !exif->ifd[ifd]) return NULL;
    return exif_content_get_entry(exif->ifd[ifd], (ExifTag)tag);
}
#endif
