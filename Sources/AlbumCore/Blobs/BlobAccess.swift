import Glibc

extension Library {
    /// Why a blob file is not what was stored, or nil when it looks intact: missing, a
    /// link, not a regular file, or changed in size or mtime since it was stored (a
    /// cheap check; `albumfs check` re-hashes), or marked damaged by `check`. Throws
    /// only when this process is out of descriptors: that is no verdict on the blob.
    public func blobProblem(_ sha256: String, descriptor: FileDescriptor? = nil) throws -> String? {
        let st: stat
        do {
            if let descriptor {
                st = try descriptor.status()
            } else {
                guard let found = try files.status(.blob(sha256)) else { return "is missing" }
                st = found
            }
        } catch let error as LibraryError where DescriptorLimit.isReached(error.errno) {
            throw error
        } catch {
            return "cannot be read (\(error))"
        }
        let stored = try? read { try $0.blobRecord(sha256) }
        if !st.isRegularFile { return "is not a regular file" }
        if let stored {
            if Int64(st.st_size) != stored.size { return "is \(st.st_size) bytes, but \(stored.size) were stored" }
            if let mtime = stored.mtimeNs, mtime != st.modificationNanoseconds { return "was changed on disk after it was stored" }
            if stored.damaged { return "was found damaged by albumfs check" }
        }
        return nil
    }

    /// Opens a blob to read it, and makes sure it is still what was stored: a file that
    /// is missing, a link, or changed in size or mtime since is `EIO`, with a log line
    /// naming who uses it (`owner`: "asset 1042 (IMG_0001.JPG)").
    public func openBlob(_ sha256: String, owner: @autoclosure () -> String) throws -> FileDescriptor {
        let descriptor: FileDescriptor
        do {
            descriptor = try blobs.open(sha256)
        } catch let error as LibraryError where DescriptorLimit.isReached(error.errno) {
            throw error  // this process's limit, not the blob (DescriptorLimit)
        } catch {
            Log.error("the original of \(owner()) cannot be opened: \(error); run albumfs check")
            throw LibraryError.io("the original of \(owner()) cannot be opened", errno: EIO)
        }
        if let problem = try blobProblem(sha256, descriptor: descriptor) {
            Log.error("the original of \(owner()) \(problem); reads fail until it is restored (copy the original in again); run albumfs check")
            throw LibraryError.io("the original of \(owner()) \(problem)", errno: EIO)
        }
        return descriptor
    }

    /// Opens an asset's current blob to read it (see `openBlob(_:owner:)`).
    public func openBlob(of asset: Asset) throws -> FileDescriptor {
        try openBlob(asset.sha256, owner: "asset \(asset.id) (\(asset.name))")
    }
}
