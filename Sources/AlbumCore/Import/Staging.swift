import Glibc

/// A file of the library whose bytes are complete and hashed, ready to become a blob: a
/// copy in `staging/` (the command line), a plain file closed through the mount, or a
/// new version being written.
public struct HashedFile: Sendable {
    public let path: LibraryPath
    public let descriptor: FileDescriptor
    public let sha256: String
    public let size: Int64
    /// The first bytes, for the sniffer.
    public let header: [UInt8]
    /// The mtime the file carries (the capture date of last resort).
    public let mtimeNs: Int64

    /// Hashes `descriptor` (the file at `path`), unless its digest was computed while it
    /// was written (`knownHash`, for a file of `size` bytes).
    public static func hashing(_ path: LibraryPath, descriptor: FileDescriptor,
                               knownHash: ((Int64) -> String?)? = nil) throws -> HashedFile {
        let st = try descriptor.status()
        let size = Int64(st.st_size)
        let hash = try knownHash?(size) ?? descriptor.sha256()
        let header = try descriptor.read(count: Sniffer.headerLength, at: 0)
        return HashedFile(path: path, descriptor: descriptor, sha256: hash, size: size, header: header,
                          mtimeNs: st.modificationNanoseconds)
    }
}

/// Files being written before import. Nothing in staging/ is ever part of the library:
/// on start-up whatever is left there (from a crash) is removed.
public struct Staging: Sendable {
    let files: LibraryFiles

    public init(files: LibraryFiles) { self.files = files }

    /// Copies a file from outside the library into staging, hashing while copying.
    public func copy(from sourcePath: String) throws -> HashedFile {
        let source = try SystemCalls.open(sourcePath, flags: O_RDONLY)
        let st = try source.status()
        guard st.isRegularFile else { throw LibraryError.refused("not a regular file") }
        source.adviseSequential()
        let (target, path) = try files.makeStagingFile(prefix: "import")
        var hasher = SHA256Hasher()
        var header: [UInt8] = []
        var offset: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        do {
            while true {
                let n = try source.read(into: buffer, at: offset)
                if n == 0 { break }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                if header.count < Sniffer.headerLength {
                    header.append(contentsOf: chunk.prefix(Sniffer.headerLength - header.count))
                }
                hasher.update(chunk)
                try target.write(chunk, at: offset)
                offset += Int64(n)
            }
        } catch {
            _ = try? files.remove(path)
            throw error
        }
        return HashedFile(path: path, descriptor: target, sha256: hasher.finalizeHex(), size: offset, header: header,
                          mtimeNs: st.modificationNanoseconds)
    }

    /// A new private file in staging/ (a new version is written there).
    public func makeFile(prefix: String) throws -> (FileDescriptor, LibraryPath) {
        try files.makeStagingFile(prefix: prefix)
    }

    /// Removes everything left in staging/ by an earlier process. Called only with the
    /// library lock held.
    @discardableResult
    public func clean() -> Int {
        var removed = 0
        for name in (try? files.names(in: files.staging)) ?? [] {
            // Only files: other hosts' folders, in a library several hosts serve, are
            // theirs (unlinkat refuses a folder).
            if (try? files.remove(files.staging.appending(name))) == true { removed += 1 }
        }
        return removed
    }
}

extension FileDescriptor {
    /// SHA-256 of the whole file, from offset 0: its hex digest.
    public func sha256() throws -> String {
        var hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let n = try read(into: buffer, at: offset)
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
        return hasher.finalizeHex()
    }
}
