import Glibc

/// A file in `staging/` whose bytes are complete and hashed, ready to be imported.
public struct StagedFile: Sendable {
    public let path: String
    public let sha256: String
    public let size: Int64
    /// The first bytes, for the sniffer.
    public let header: [UInt8]
    /// The mtime the file carried (the capture date of last resort).
    public let mtimeNs: Int64

    public init(path: String, sha256: String, size: Int64, header: [UInt8], mtimeNs: Int64) {
        self.path = path
        self.sha256 = sha256
        self.size = size
        self.header = header
        self.mtimeNs = mtimeNs
    }
}

/// Files being written before import. Nothing in staging/ is ever part of the library:
/// on start-up whatever is left there (from a crash) is removed.
public struct Staging: Sendable {
    public let paths: LibraryPaths

    /// A new, empty, private file in staging/; returns its descriptor and path.
    public func createFile(prefix: String = "write") throws -> (fd: Int32, path: String) {
        for _ in 0..<100 {
            let path = "\(paths.staging)/\(prefix)-\(UInt64.random(in: 0...UInt64.max).hex16).tmp"
            let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { return (fd, path) }
            if errno != EEXIST { throw LibraryError.io("cannot create a file in \(paths.staging)", errno: errno) }
        }
        throw LibraryError.io("cannot create a file in \(paths.staging)", errno: EEXIST)
    }

    /// Copies a source file into staging, hashing while copying.
    public func copy(from sourcePath: String) throws -> StagedFile {
        let source = try FileIO.openRead(sourcePath)
        defer { close(source) }
        var st = stat()
        guard fstat(source, &st) == 0 else { throw LibraryError.io(sourcePath, errno: errno) }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw LibraryError.refused("not a regular file")
        }
        posix_fadvise(source, 0, 0, POSIX_FADV_SEQUENTIAL)
        let (fd, path) = try createFile(prefix: "import")
        defer { close(fd) }
        var hasher = SHA256Hasher()
        var header: [UInt8] = []
        var total: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FileIO.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        do {
            while true {
                let n = try FileIO.read(source, buffer, path: sourcePath)
                if n == 0 { break }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                if header.count < Sniffer.headerLength {
                    header.append(contentsOf: chunk.prefix(Sniffer.headerLength - header.count))
                }
                hasher.update(chunk)
                try FileIO.writeAll(fd, chunk, path: path)
                total += Int64(n)
            }
        } catch {
            unlink(path)
            throw error
        }
        let mtime = st.st_mtim.nanoseconds
        return StagedFile(path: path, sha256: hasher.finalizeHex(), size: total, header: header, mtimeNs: mtime)
    }

    /// Hashes a file already in staging (written through the mount), unless its digest
    /// was computed while it was written (`knownHash`).
    public func seal(path: String, fd: Int32, mtimeNs: Int64, knownHash: ((Int64) -> String?)? = nil) throws -> StagedFile {
        let size = FileIO.fileSize(fd)
        let hash: String
        if let known = knownHash?(size) {
            hash = known
        } else {
            hash = try FileIO.sha256(fd: fd, path: path).hash
        }
        var header = [UInt8](repeating: 0, count: Sniffer.headerLength)
        let n = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        header = Array(header.prefix(max(0, n)))
        return StagedFile(path: path, sha256: hash, size: size, header: header, mtimeNs: mtimeNs)
    }

    /// Removes everything left in staging/ by an earlier process. Called only with the
    /// library lock held.
    public func clean() -> Int {
        guard let dir = opendir(paths.staging) else { return 0 }
        defer { closedir(dir) }
        var removed = 0
        while let entry = readdir(dir) {
            let name = direntName(entry)
            if name == "." || name == ".." { continue }
            if unlink("\(paths.staging)/\(name)") == 0 { removed += 1 }
        }
        return removed
    }
}

extension UInt64 {
    var hex16: String { String(self, radix: 16).leftPadded(16) }
}
