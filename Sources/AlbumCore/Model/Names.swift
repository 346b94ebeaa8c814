import Foundation
import Glibc

/// File names: validation, the comparison key, and the ` (2)` suffixes.
///
/// Names inside one directory are unique by their key: the name in Unicode NFC,
/// lowercased. Samba, macOS and Windows clients compare names that way, so two names
/// that differ only in case or normalization are one name here.
public enum Names {
    public static let maxBytes = 255

    /// The comparison key of a name.
    public static func key(_ name: String) -> String {
        // Every lookup computes a key, and most names are ASCII, whose NFC form is
        // themselves: Foundation's normalization (a round trip through NSString) was
        // half of a lookup's CPU time.
        if name.utf8.allSatisfy({ $0 < 0x80 }) { return name.lowercased() }
        return name.precomposedStringWithCanonicalMapping.lowercased()
    }

    /// Validates a name that arrived as bytes; returns it as a String.
    /// Not UTF-8: EILSEQ. Over 255 bytes: ENAMETOOLONG. Empty, `.`, `..`, or with `/` or
    /// NUL: EINVAL.
    public static func validate<C: Collection>(bytes: C) throws -> String where C.Element == UInt8 {
        if bytes.count > maxBytes {
            throw LibraryError.invalidName("name is longer than \(maxBytes) bytes", errno: ENAMETOOLONG)
        }
        guard let name = String(validating: bytes, as: UTF8.self) else {
            throw LibraryError.invalidName("name is not valid UTF-8", errno: EILSEQ)
        }
        try validate(name)
        return name
    }

    public static func validate(_ name: String) throws {
        if name.utf8.count > maxBytes {
            throw LibraryError.invalidName("name is longer than \(maxBytes) bytes: \(name.prefix(40))...", errno: ENAMETOOLONG)
        }
        if name.isEmpty || name == "." || name == ".." || name.utf8.contains(0x2f) || name.utf8.contains(0) {
            throw LibraryError.invalidName("invalid name: \(name)", errno: EINVAL)
        }
    }

    /// A name that is never imported: hidden files (a leading dot) and the junk that
    /// file managers and network clients leave behind.
    public static func isScratch(_ name: String) -> Bool {
        if name.hasPrefix(".") || name.hasPrefix("~$") { return true }
        let lower = name.lowercased()
        return lower == "thumbs.db" || lower == "desktop.ini" || lower == "ehthumbs.db"
    }

    /// A name whose file stays a plain file whatever its bytes: a hidden or junk name, or
    /// a sidecar's (a camera's `.THM` is a JPEG, and still not a photo of the library).
    public static func staysPlain(_ name: String) -> Bool {
        isScratch(name) || Sidecars.isSidecarName(name)
    }

    /// `IMG_0001.JPG` with suffix 2 is `IMG_0001 (2).JPG`: the suffix goes before the
    /// extension, so the name keeps opening with the right program.
    public static func withSuffix(_ name: String, _ n: Int) -> String {
        guard n > 1 else { return name }
        let (stem, ext) = split(name)
        var candidate = "\(stem) (\(n))\(ext)"
        // Keep within 255 bytes by shortening the stem.
        var shortStem = stem
        while candidate.utf8.count > maxBytes && !shortStem.isEmpty {
            shortStem.removeLast()
            candidate = "\(shortStem) (\(n))\(ext)"
        }
        return candidate
    }

    /// Splits `name` into stem and extension (with its dot); a leading dot is not an
    /// extension.
    public static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        let ext = name[dot...]
        if ext.count > 10 || ext.contains(" ") { return (name, "") }
        return (String(name[..<dot]), String(ext))
    }

    /// The first of `name`, `name (2)`, `name (3)`, ... whose key `isTaken` says is free.
    public static func firstFree(_ name: String, isTaken: (String) throws -> Bool) rethrows -> String {
        var n = 1
        while true {
            let candidate = withSuffix(name, n)
            if try !isTaken(key(candidate)) { return candidate }
            n += 1
        }
    }
}
