import Glibc

/// The content-addressed store of originals: `originals/ab/<sha256>`, where `ab` is the
/// first two hex digits. A blob is written to staging, fsynced, renamed into place and
/// its directory fsynced; it is read-only (0400) from then on and never changes.
public struct BlobStore: Sendable {
    public let paths: LibraryPaths

    public func path(for sha256: String) -> String {
        "\(paths.originals)/\(sha256.prefix(2))/\(sha256)"
    }

    public func exists(_ sha256: String) -> Bool { FileIO.exists(path(for: sha256)) }

    /// Moves a fully written, hashed staging file into the store. The caller has made
    /// sure the staging file holds exactly the bytes named by `sha256`.
    public func adopt(stagedFile: String, sha256: String) throws {
        let directory = "\(paths.originals)/\(sha256.prefix(2))"
        let target = path(for: sha256)
        var createdDirectory = false
        if mkdir(directory, 0o700) == 0 {
            createdDirectory = true
        } else if errno != EEXIST {
            throw LibraryError.io("cannot create \(directory)", errno: errno)
        }
        let fd = try FileIO.openRead(stagedFile)
        defer { close(fd) }
        try FileIO.fsync(fd, path: stagedFile)
        fchmod(fd, 0o400)
        if FileIO.exists(target) {
            // Another import put the same bytes in place first; ours is redundant.
            unlink(stagedFile)
            return
        }
        guard rename(stagedFile, target) == 0 else {
            throw LibraryError.io("cannot move \(stagedFile) to \(target)", errno: errno)
        }
        try FileIO.fsyncDirectory(directory)
        if createdDirectory { try FileIO.fsyncDirectory(paths.originals) }
    }

    /// Removes a blob file (gc). Missing files are not an error.
    public func remove(_ sha256: String) throws {
        let target = path(for: sha256)
        if unlink(target) != 0 && errno != ENOENT {
            throw LibraryError.io("cannot remove \(target)", errno: errno)
        }
    }

    /// Every blob file in the store, by name (for check and gc).
    public func allHashes() -> [String] {
        var result: [String] = []
        guard let top = opendir(paths.originals) else { return [] }
        defer { closedir(top) }
        while let entry = readdir(top) {
            let name = direntName(entry)
            guard name.utf8.count == 2, name != "..", let sub = opendir("\(paths.originals)/\(name)") else { continue }
            while let inner = readdir(sub) {
                let file = direntName(inner)
                if file != "." && file != ".." { result.append(file) }
            }
            closedir(sub)
        }
        return result
    }
}

func direntName(_ entry: UnsafeMutablePointer<dirent>) -> String {
    withUnsafePointer(to: entry.pointee.d_name) {
        $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
    }
}
