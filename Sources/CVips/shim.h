#ifndef ALBUMFS_CVIPS_SHIM_H
#define ALBUMFS_CVIPS_SHIM_H
// libvips (decode, headers, thumbnails) and libheif (the stored, un-rotated size of
// HEIF images). EXIF, XMP and IPTC are read by exiv2 (the CExiv2 target).
#include <vips/vips.h>
#include <libheif/heif.h>

// --- libvips: its API is variadic (option lists ending in NULL) -------------------

// Opens only the header; pixels are decoded lazily, so this is cheap.
static inline VipsImage *shim_vips_open_header(const char *path) {
    return vips_image_new_from_file(path, "access", VIPS_ACCESS_SEQUENTIAL, NULL);
}

// The header through the loader named (the sniffer knows the format already):
// vips_image_new_from_file first asks every loader whether the file is theirs,
// OpenSlide's detection among them, which costs more than a JPEG's header itself
// (0.2-0.3 ms a file here, against 0.09 ms for the header). A loader this libvips
// lacks: that search after all.
static inline VipsImage *shim_vips_open_header_with(const char *path, const char *loader) {
    if (!loader || !vips_type_find("VipsOperation", loader)) return shim_vips_open_header(path);
    VipsImage *out = NULL;
    if (vips_call(loader, path, &out, "access", VIPS_ACCESS_SEQUENTIAL, NULL)) return NULL;
    return out;
}

// Shrink-on-load thumbnail, upright by EXIF orientation, never enlarged.
static inline int shim_vips_thumbnail(const char *path, int size, VipsImage **out) {
    return vips_thumbnail(path, out, size, "height", size, "size", VIPS_SIZE_DOWN,
                          "export_profile", "srgb", NULL);
}

// A thumbnail of an embedded preview (a camera RAW's JPEG), turned upright by the
// orientation of the RAW it came from: previews often carry none of their own.
static inline int shim_vips_thumbnail_preview(const void *bytes, size_t length, int size, int orientation,
                                              VipsImage **out) {
    VipsImage *thumb = NULL, *tagged = NULL;
    if (vips_thumbnail_buffer((void *)bytes, length, &thumb, size, "height", size, "size", VIPS_SIZE_DOWN,
                              "no_rotate", TRUE, "export_profile", "srgb", NULL)) return -1;
    if (orientation <= 1 || orientation > 8) { *out = thumb; return 0; }
    if (vips_copy(thumb, &tagged, NULL)) { g_object_unref(thumb); return -1; }
    g_object_unref(thumb);
    vips_image_set_int(tagged, VIPS_META_ORIENTATION, orientation);
    int rc = vips_autorot(tagged, out, NULL);
    g_object_unref(tagged);
    return rc;
}

// A PNG of the freedesktop.org shared thumbnail repository, made from one of our own
// thumbnail JPEGs (upright, no metadata): at most `side` pixels, with the Thumb::URI and
// Thumb::MTime text chunks the specification asks for.
static inline int shim_vips_shared_png(const char *jpeg, int side, const char *uri, const char *mtime,
                                       void **bytes, size_t *length) {
    VipsImage *thumb = NULL, *tagged = NULL;
    if (vips_thumbnail(jpeg, &thumb, side, "height", side, "size", VIPS_SIZE_DOWN, NULL)) return -1;
    if (vips_copy(thumb, &tagged, NULL)) { g_object_unref(thumb); return -1; }
    g_object_unref(thumb);
    vips_image_set_string(tagged, "png-comment-0-Thumb::URI", uri);
    vips_image_set_string(tagged, "png-comment-1-Thumb::MTime", mtime);
    int rc = vips_pngsave_buffer(tagged, bytes, length, NULL);
    g_object_unref(tagged);
    return rc;
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

#endif
