#ifndef ALBUMFS_EXIV2_H
#define ALBUMFS_EXIV2_H
// A C face for exiv2 (C++), so that no Swift module needs C++ interoperability.
// Everything here catches exiv2's exceptions and reports them as a return value and a
// one-line reason; nothing throws across this boundary.
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// The metadata of one file (a photo, a camera RAW, or an XMP sidecar), read at open.
typedef struct albumfs_exiv2_file albumfs_exiv2_file;

// Once per process: exiv2's messages muted (reasons come back through `error`), HEIF and
// CR3 (BMFF) reading on, the XMP toolkit set up.
void albumfs_exiv2_initialize(void);

// Opens `path` and reads its EXIF, IPTC and XMP. NULL when exiv2 cannot read it, with
// the reason in `error` (NUL-terminated, cut to `error_size`).
albumfs_exiv2_file *albumfs_exiv2_open(const char *path, char *error, size_t error_size);
void albumfs_exiv2_close(albumfs_exiv2_file *file);

// The pixel size exiv2 found in the file's structure (0 when it found none).
void albumfs_exiv2_pixel_size(const albumfs_exiv2_file *file, long *width, long *height);

// How many values `key` has ("Exif.Photo.DateTimeOriginal", "Xmp.dc.subject",
// "Iptc.Application2.Keywords"); 0 when the file does not have it.
int albumfs_exiv2_count(const albumfs_exiv2_file *file, const char *key);

// Value `index` of `key` as text (a language alternative: its default language; a
// comment: its text without the character-code prefix). Returns the length of the
// whole text (the copy in `out` is NUL-terminated and cut to `size`), or -1 when absent.
long albumfs_exiv2_text(const albumfs_exiv2_file *file, const char *key, int index, char *out, size_t size);

// Value `index` of `key` as a number (a rational divided out). 0 when found, -1 when
// absent or not a number.
int albumfs_exiv2_number(const albumfs_exiv2_file *file, const char *key, int index, double *out);

// The embedded preview (RAW files, most camera JPEGs) to make a thumbnail of `side`
// pixels from: the smallest one whose longer side is at least `side`, else the largest.
// Its bytes are copied into a buffer from malloc that the caller frees. 0 when found,
// -1 when the file has none.
int albumfs_exiv2_preview(const albumfs_exiv2_file *file, int side, unsigned char **bytes, size_t *length,
                          int *width, int *height);

#ifdef __cplusplus
}
#endif
#endif
