import AlbumCore
import Foundation
import Glibc

/// A folder tree as a user compares two: every file by its path and the SHA-256 of its
/// bytes, every folder by its path. The best oracle for "works like a plain directory"
/// is a plain directory: run the same tool on both and compare their trees.
public enum Trees {
    /// `relative path` → `sha256` (files), `"/"` (folders) or `"-> TARGET"` (symbolic
    /// links, not followed), below `root`. Names in
    /// `skipping` (at any depth) are left out with what is below them.
    public static func snapshot(_ root: String, skipping: Set<String> = [".thumbnails"]) throws -> [String: String] {
        var out: [String: String] = [:]
        func walk(_ relative: String) throws {
            let path = relative.isEmpty ? root : root + "/" + relative
            for raw in try SystemCalls.names(in: path) {
                let name = String(decoding: raw, as: UTF8.self)
                if skipping.contains(name) { continue }
                let child = relative.isEmpty ? name : relative + "/" + name
                guard let st = try SystemCalls.status(root + "/" + child, followLinks: false) else { continue }
                if st.isDirectory {
                    out[child] = "/"
                    try walk(child)
                } else if st.st_mode & S_IFMT == S_IFLNK {
                    var target = [CChar](repeating: 0, count: Int(PATH_MAX))
                    let n = readlink(root + "/" + child, &target, target.count)
                    out[child] = n < 0 ? "-> (unreadable: errno \(errno))" : "-> " + String(decoding: target[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                } else {
                    out[child] = try SystemCalls.open(root + "/" + child, flags: O_RDONLY).sha256()
                }
            }
        }
        try walk("")
        return out
    }

    /// What differs between two snapshots, one line each; empty when they are equal.
    public static func differences(_ a: [String: String], _ b: [String: String], names: (String, String) = ("left", "right")) -> [String] {
        var lines: [String] = []
        for key in Set(a.keys).union(b.keys).sorted() {
            switch (a[key], b[key]) {
            case (nil, _?): lines.append("only in \(names.1): \(key)")
            case (_?, nil): lines.append("only in \(names.0): \(key)")
            case (let x?, let y?) where x != y: lines.append("differs: \(key)")
            default: break
            }
        }
        return lines
    }
}
