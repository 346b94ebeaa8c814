#ifndef ALBUMFS_CVIPS_SHIM_H
#define ALBUMFS_CVIPS_SHIM_H
// libvips (decode, headers, thumbnails), libheif (the stored, un-rotated size of
// HEIF images), libpng (the shared repository's PNGs) and libjpeg (a JPEG's header at
// import). EXIF, XMP and IPTC are read by exiv2 (the CExiv2 target).
#include <vips/vips.h>
#include <libheif/heif.h>
#include <png.h>
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

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

// --- libjpeg: a JPEG's header at import ---------------------------------------------

// libvips's JPEG header load reads the same header with the same libjpeg, then turns
// every EXIF tag into a string with libexif, which import does not use (exiv2 reads the
// tags): 0.4 ms of a 1.1 ms metadata request for a phone's photo, measured here. So an
// import asks libjpeg alone: the same verdict on whether the header parses (every JPEG
// of the test samples gets the same answer and size from both) and the stored size.
struct shim_jpeg_reader {
    struct jpeg_decompress_struct info;
    struct jpeg_error_mgr errors;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int ok;
};

static void shim_jpeg_error_exit(j_common_ptr info) {
    struct shim_jpeg_reader *reader = (struct shim_jpeg_reader *)info->client_data;
    (*info->err->format_message)(info, reader->message);
    longjmp(reader->jump, 1);
}

// Warnings (a corrupt byte count, extraneous data) do not make a header unreadable,
// as they do not for libvips by default.
static void shim_jpeg_ignore_message(j_common_ptr info, int level) { (void)info; (void)level; }

/* libjpeg reports errors by longjmp: everything it changes after the setjmp is in the
   heap block `reader` (whose pointer, like `file`, is not changed), so nothing is
   indeterminate after the jump, and setjmp is the whole condition of its `if`. */
static int shim_jpeg_header(const char *path, int *width, int *height, char *reason, size_t reason_size) {
    FILE *file = fopen(path, "rbe");
    if (!file) {
        snprintf(reason, reason_size, "%s", strerror(errno));
        return -1;
    }
    struct shim_jpeg_reader *reader = calloc(1, sizeof *reader);
    if (!reader) {
        fclose(file);
        snprintf(reason, reason_size, "out of memory");
        return -1;
    }
    reader->info.err = jpeg_std_error(&reader->errors);
    reader->errors.error_exit = shim_jpeg_error_exit;
    reader->errors.emit_message = shim_jpeg_ignore_message;
    reader->info.client_data = reader;
    if (setjmp(reader->jump) == 0) {
        jpeg_create_decompress(&reader->info);
        jpeg_stdio_src(&reader->info, file);
        jpeg_read_header(&reader->info, TRUE);
        *width = (int)reader->info.image_width;
        *height = (int)reader->info.image_height;
        reader->ok = 1;
    } else {
        snprintf(reason, reason_size, "%s", reader->message);
    }
    jpeg_destroy_decompress(&reader->info);
    int ok = reader->ok;
    free(reader);
    fclose(file);
    return ok ? 0 : -1;
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
// thumbnail JPEGs (upright, no metadata): at most `side` pixels, as the specification
// asks: 8-bit RGBA, not interlaced, with `Thumb::URI` and `Thumb::MTime` in tEXt chunks.
// libvips writes its PNG comments as zTXt, which readers that follow the specification
// to the letter skip (GLib's thumbnail-verify.c reads tEXt only); so libvips makes the
// pixels and libpng writes the file. The bytes are g_malloc'd (free with g_free).
struct shim_png_buffer { unsigned char *data; size_t length, capacity; };

static void shim_png_append(png_structp png, png_bytep data, png_size_t length) {
    struct shim_png_buffer *out = (struct shim_png_buffer *)png_get_io_ptr(png);
    if (out->length + length > out->capacity) {
        out->capacity = (out->length + length) * 2;
        out->data = g_realloc(out->data, out->capacity);
    }
    memcpy(out->data + out->length, data, length);
    out->length += length;
}

static void shim_png_flush(png_structp png) { (void)png; }

/* libpng reports errors by longjmp: this frame changes nothing after its setjmp (the
   buffer is the caller's, reached through a pointer), so nothing here is indeterminate
   after the jump, and setjmp is the whole condition of its `if`, as C requires. */
static int shim_png_write_rgba(const unsigned char *pixels, int width, int height, const char *uri,
                               const char *mtime, struct shim_png_buffer *out) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    if (!png) return -1;
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_write_struct(&png, NULL); return -1; }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_set_write_fn(png, out, shim_png_append, shim_png_flush);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text[2];
    memset(text, 0, sizeof text);
    text[0].compression = PNG_TEXT_COMPRESSION_NONE;
    text[0].key = (png_charp)"Thumb::URI";
    text[0].text = (png_charp)uri;
    text[1].compression = PNG_TEXT_COMPRESSION_NONE;
    text[1].key = (png_charp)"Thumb::MTime";
    text[1].text = (png_charp)mtime;
    png_set_text(png, info, text, 2);
    png_write_info(png, info);
    for (int y = 0; y < height; y++) png_write_row(png, (png_bytep)(pixels + (size_t)y * (size_t)width * 4));
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

static inline int shim_vips_shared_png(const char *jpeg, int side, const char *uri, const char *mtime,
                                       void **bytes, size_t *length) {
    VipsImage *thumb = NULL, *srgb = NULL, *rgba = NULL, *u8 = NULL;
    if (vips_thumbnail(jpeg, &thumb, side, "height", side, "size", VIPS_SIZE_DOWN, NULL)) return -1;
    int failed = vips_colourspace(thumb, &srgb, VIPS_INTERPRETATION_sRGB, NULL)
        || (srgb->Bands == 3 ? vips_addalpha(srgb, &rgba, NULL) : vips_copy(srgb, &rgba, NULL))
        || rgba->Bands != 4 || vips_cast_uchar(rgba, &u8, NULL);
    size_t size = 0;
    unsigned char *pixels = failed ? NULL : vips_image_write_to_memory(u8, &size);
    int width = failed ? 0 : u8->Xsize, height = failed ? 0 : u8->Ysize;
    if (thumb) g_object_unref(thumb);
    if (srgb) g_object_unref(srgb);
    if (rgba) g_object_unref(rgba);
    if (u8) g_object_unref(u8);
    if (!pixels) { if (!failed) vips_error("albumfs", "the thumbnail's pixels cannot be read"); return -1; }

    struct shim_png_buffer out = { NULL, 0, 0 };
    int written = shim_png_write_rgba(pixels, width, height, uri, mtime, &out);
    g_free(pixels);
    if (written != 0) {
        g_free(out.data);
        vips_error("albumfs", "libpng cannot write the shared thumbnail");
        return -1;
    }
    *bytes = out.data;
    *length = out.length;
    return 0;
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
