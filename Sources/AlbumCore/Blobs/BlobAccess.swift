import Glibc

extension Library {
    /// The library folder, opened once: every file of the library is opened below it
    /// with `SystemCalls.openBeneath`, so that no link can lead a read or write outside.
    func libraryFD() throws -> Int32 {
        try rootDescriptor.withLock { fd in
            if fd < 0 {
                fd = Glibc.open(paths.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if fd < 0 { throw LibraryError.io("cannot open \(paths.root)", errno: errno) }
            }
            return fd
        }
    }

    /// Opens a file of the library (`originals/ab/<hash>`, `scratch/<id>`, ...) by its
    /// path relative to the library, never through a symbolic link.
    public func openInside(_ relative: String, flags: Int32, mode: UInt32 = 0o600) throws -> Int32 {
        let fd = SystemCalls.openBeneath(try libraryFD(), relative, flags: flags, mode: mode)
        if fd < 0 {
            let code = errno
            if code == ELOOP || code == EXDEV {
                Log.error("\(paths.root)/\(relative) is a symbolic link or leads out of the library: refused")
                throw LibraryError.io("\(relative) leads out of the library (a symbolic link?)", errno: EIO)
            }
            throw LibraryError.io("\(paths.root)/\(relative)", errno: code)
        }
        return fd
    }

    /// Opens an asset's current blob to read it, and makes sure it is still what was
    /// stored: a file that is missing, a link, or changed in size or mtime since is
    /// `EIO`, with a log line naming the asset.
    public func openBlob(of asset: Asset) throws -> Int32 {
        let relative = "originals/\(asset.sha256.prefix(2))/\(asset.sha256)"
        let fd: Int32
        do {
            fd = try openInside(relative, flags: O_RDONLY)
        } catch let error as LibraryError {
            Log.error("the original of asset \(asset.id) (\(asset.name)) cannot be opened: \(error); run albumfs check")
            throw LibraryError.io("the original of \(asset.name) cannot be opened", errno: EIO)
        }
        var st = stat()
        fstat(fd, &st)
        let mtime = st.st_mtim.nanoseconds
        let stored = (try? read { db in
            try db.first("SELECT size, mtime_ns FROM blobs WHERE sha256 = ?", asset.sha256) { ($0.int64(0), $0.optionalInt64(1)) }
        }) ?? nil
        let storedSize = stored?.0 ?? asset.size
        var problem: String?
        if (st.st_mode & S_IFMT) != S_IFREG {
            problem = "is not a regular file"
        } else if Int64(st.st_size) != storedSize {
            problem = "is \(st.st_size) bytes, but \(storedSize) were stored"
        } else if let storedMtime = stored?.1, storedMtime != mtime {
            problem = "was changed on disk after it was stored"
        }
        if let problem {
            close(fd)
            Log.error("the original of asset \(asset.id) (\(asset.name)) \(problem); reads fail until it is restored; run albumfs check")
            throw LibraryError.io("the original of \(asset.name) \(problem)", errno: EIO)
        }
        return fd
    }

    /// The mtime a blob file has now (recorded when it is stored).
    func blobMtime(_ sha256: String) -> Int64? {
        var st = stat()
        guard stat(blobs.path(for: sha256), &st) == 0 else { return nil }
        return st.st_mtim.nanoseconds
    }
}
