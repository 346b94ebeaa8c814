// The C face of exiv2 (see include/albumfs_exiv2.h). Kept small: it hands values out;
// what they mean (which date wins, degrees from rationals) is decided in Swift.
#include "albumfs_exiv2.h"

#include <exiv2/exiv2.hpp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

struct albumfs_exiv2_file {
    std::unique_ptr<Exiv2::Image> image;
};

namespace {

void copy_reason(const std::string &reason, char *error, size_t size) {
    if (!error || size == 0) return;
    size_t n = reason.size() < size - 1 ? reason.size() : size - 1;
    std::memcpy(error, reason.data(), n);
    error[n] = 0;
}

// The value of a key in whichever of the three blocks its family names.
const Exiv2::Value *find(const albumfs_exiv2_file *file, const char *key) {
    if (!file || !file->image.get() || !key) return nullptr;
    try {
        Exiv2::Image &image = *file->image;
        if (std::strncmp(key, "Exif.", 5) == 0) {
            // ExifData::findKey builds each tag's key as a new string to compare (a
            // malloc per tag per lookup: a tenth of a metadata request); the tag number
            // and its IFD name the same key, and the first match is findKey's.
            const Exiv2::ExifKey wanted(key);
            for (const Exiv2::Exifdatum &datum : image.exifData()) {
                if (datum.tag() == wanted.tag() && datum.ifdId() == wanted.ifdId()) return &datum.value();
            }
            return nullptr;
        }
        if (std::strncmp(key, "Xmp.", 4) == 0) {
            Exiv2::XmpData &data = image.xmpData();
            auto it = data.findKey(Exiv2::XmpKey(key));
            return it == data.end() ? nullptr : &it->value();
        }
        if (std::strncmp(key, "Iptc.", 5) == 0) {
            // IPTC repeats a dataset for each value (Keywords); the first is found here,
            // the others by albumfs_exiv2_text with an index.
            Exiv2::IptcData &data = image.iptcData();
            auto it = data.findKey(Exiv2::IptcKey(key));
            return it == data.end() ? nullptr : &it->value();
        }
    } catch (...) {
    }
    return nullptr;
}

bool is_iptc(const char *key) { return key && std::strncmp(key, "Iptc.", 5) == 0; }

// IPTC value `index` of a repeated dataset.
const Exiv2::Value *iptc_value(const albumfs_exiv2_file *file, const char *key, int index) {
    try {
        Exiv2::IptcData &data = file->image->iptcData();
        Exiv2::IptcKey wanted(key);
        int seen = 0;
        for (auto it = data.begin(); it != data.end(); ++it) {
            if (it->tag() == wanted.tag() && it->record() == wanted.record()) {
                if (seen == index) return &it->value();
                ++seen;
            }
        }
    } catch (...) {
    }
    return nullptr;
}

std::string text_of(const Exiv2::Value &value, int index) {
    switch (value.typeId()) {
    case Exiv2::langAlt: {
        const auto &alt = static_cast<const Exiv2::LangAltValue &>(value);
        auto it = alt.value_.find("x-default");
        if (it != alt.value_.end()) return it->second;
        return alt.value_.empty() ? std::string() : alt.value_.begin()->second;
    }
    case Exiv2::comment:
        return static_cast<const Exiv2::CommentValue &>(value).comment();
    case Exiv2::xmpBag:
    case Exiv2::xmpSeq:
    case Exiv2::xmpAlt:
        return value.toString(index);
    default:
        return index == 0 ? value.toString() : value.toString(index);
    }
}

}  // namespace

extern "C" {

void albumfs_exiv2_initialize(void) {
    static std::once_flag once;
    std::call_once(once, [] {
        Exiv2::LogMsg::setLevel(Exiv2::LogMsg::mute);
        Exiv2::XmpParser::initialize();
#ifdef EXV_ENABLE_BMFF
        Exiv2::enableBMFF(true);
#endif
    });
}

albumfs_exiv2_file *albumfs_exiv2_open(const char *path, char *error, size_t error_size) {
    albumfs_exiv2_initialize();
    try {
        std::unique_ptr<albumfs_exiv2_file> file(new albumfs_exiv2_file);
        file->image.reset(Exiv2::ImageFactory::open(path).release());
        if (!file->image.get()) {
            copy_reason("exiv2 does not know this format", error, error_size);
            return nullptr;
        }
        file->image->readMetadata();
        return file.release();
    } catch (const std::exception &e) {
        copy_reason(e.what(), error, error_size);
    } catch (...) {
        copy_reason("exiv2 failed", error, error_size);
    }
    return nullptr;
}

void albumfs_exiv2_close(albumfs_exiv2_file *file) { delete file; }

void albumfs_exiv2_pixel_size(const albumfs_exiv2_file *file, long *width, long *height) {
    *width = 0;
    *height = 0;
    if (!file || !file->image.get()) return;
    try {
        *width = static_cast<long>(file->image->pixelWidth());
        *height = static_cast<long>(file->image->pixelHeight());
    } catch (...) {
    }
}

int albumfs_exiv2_count(const albumfs_exiv2_file *file, const char *key) {
    if (is_iptc(key)) {
        int n = 0;
        while (iptc_value(file, key, n)) ++n;
        return n;
    }
    const Exiv2::Value *value = find(file, key);
    if (!value) return 0;
    try {
        switch (value->typeId()) {
        case Exiv2::xmpBag:
        case Exiv2::xmpSeq:
        case Exiv2::xmpAlt:
            return static_cast<int>(value->count());
        case Exiv2::asciiString:
        case Exiv2::string:
        case Exiv2::xmpText:
        case Exiv2::langAlt:
        case Exiv2::comment:
        case Exiv2::date:
        case Exiv2::time:
            return 1;
        default:
            return static_cast<int>(value->count());
        }
    } catch (...) {
        return 0;
    }
}

long albumfs_exiv2_text(const albumfs_exiv2_file *file, const char *key, int index, char *out, size_t size) {
    const Exiv2::Value *value = is_iptc(key) ? iptc_value(file, key, index) : find(file, key);
    if (!value) return -1;
    try {
        std::string text = text_of(*value, is_iptc(key) ? 0 : index);
        copy_reason(text, out, size);
        return static_cast<long>(text.size());
    } catch (...) {
        return -1;
    }
}

int albumfs_exiv2_number(const albumfs_exiv2_file *file, const char *key, int index, double *out) {
    const Exiv2::Value *value = is_iptc(key) ? iptc_value(file, key, index) : find(file, key);
    if (!value) return -1;
    try {
        if (index >= value->count() && !is_iptc(key)) return -1;
        switch (value->typeId()) {
        case Exiv2::unsignedRational:
        case Exiv2::signedRational: {
            Exiv2::Rational r = value->toRational(index);
            if (r.second == 0) return -1;
            *out = static_cast<double>(r.first) / static_cast<double>(r.second);
            return 0;
        }
        case Exiv2::unsignedByte: case Exiv2::unsignedShort: case Exiv2::unsignedLong:
        case Exiv2::signedByte: case Exiv2::signedShort: case Exiv2::signedLong:
        case Exiv2::tiffFloat: case Exiv2::tiffDouble: case Exiv2::tiffIfd:
            *out = static_cast<double>(value->toFloat(index));
            return 0;
        default: {
            // Text that holds a number (XMP's Rating, a GPS coordinate written as text).
            std::string text = text_of(*value, index);
            char *end = nullptr;
            double v = std::strtod(text.c_str(), &end);
            if (end == text.c_str()) return -1;
            *out = v;
            return 0;
        }
        }
    } catch (...) {
        return -1;
    }
}

int albumfs_exiv2_preview(const albumfs_exiv2_file *file, int side, unsigned char **bytes, size_t *length,
                          int *width, int *height) {
    if (!file || !file->image.get()) return -1;
    try {
        Exiv2::PreviewManager manager(*file->image);
        Exiv2::PreviewPropertiesList all = manager.getPreviewProperties();  // smallest first
        // JPEG previews first: a TIFF one is exiv2's own re-wrapping of a RAW's strip,
        // which decoders do not always read back.
        Exiv2::PreviewPropertiesList list;
        for (const auto &p : all) if (p.mimeType_ == "image/jpeg") list.push_back(p);
        if (list.empty()) list = all;
        if (list.empty()) return -1;
        const Exiv2::PreviewProperties *chosen = &list.back();
        for (const auto &p : list) {
            if (static_cast<int>(p.width_ > p.height_ ? p.width_ : p.height_) >= side) { chosen = &p; break; }
        }
        Exiv2::PreviewImage preview = manager.getPreviewImage(*chosen);
        size_t n = preview.size();
        if (n == 0) return -1;
        unsigned char *copy = static_cast<unsigned char *>(std::malloc(n));
        if (!copy) return -1;
        std::memcpy(copy, preview.pData(), n);
        *bytes = copy;
        *length = n;
        *width = static_cast<int>(preview.width());
        *height = static_cast<int>(preview.height());
        return 0;
    } catch (...) {
        return -1;
    }
}

}  // extern "C"
