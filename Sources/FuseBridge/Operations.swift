import AlbumCore
import AlbumFSCore
import CFuse
import CFuseRing
import Glibc

// The C callbacks. Each is a thin thunk: find the bridge, call the filesystem core,
// reply. They are plain functions of this library target, not closures of main.swift,
// so they carry no actor isolation and run on libfuse's worker threads.

nonisolated func makeOperations() -> fuse_lowlevel_ops {
    var ops = fuse_lowlevel_ops()
    ops.`init` = { userdata, conn in
        guard let conn else { return }
        shim_configure_conn(conn, 1 << 20, 1 << 20)
    }
    ops.lookup = { req, parent, name in
        let b = Bridge.from(req)
        let asked = bytes(name), shown = display(name), request = HandedOver(req: req)
        b.answer(about: b.ino(parent), name: asked) {
            let req = request.req
            b.handle(req, "lookup \(shown) in \(parent)") {
                // "." is how an NFS server finds a handle's node: the answer is that very node.
                let found = try b.fs.lookup(parent: b.ino(parent), name: asked, pid: caller(req))
                b.replyFound(req, found, asked: asked, node: asked == [0x2E] ? parent : nil)
            }
        }
    }
    ops.forget = { req, _, _ in fuse_reply_none(req) }
    ops.forget_multi = { req, _, _ in fuse_reply_none(req) }
    ops.getattr = { req, ino, _ in
        let b = Bridge.from(req)
        let request = HandedOver(req: req)
        b.answer(about: b.ino(ino)) {
            let req = request.req
            b.handle(req, "getattr \(ino)") { b.replyAttr(req, try b.fs.getattr(b.ino(ino), node: ino)) }
        }
    }
    ops.open = { req, ino, fi in
        let b = Bridge.from(req)
        guard let fi else { fuse_reply_err(req, EINVAL); return }
        let request = HandedOver(req: req, info: fi.pointee)
        b.answer(about: b.ino(ino)) {
            var request = request
            let req = request.req
            b.handle(req, "open \(ino)") {
                let opened = try b.fs.open(b.ino(ino), node: ino, flags: shim_fi_flags(&request.info), pid: caller(req))
                let rc: Int32
                switch opened.mode {
                case .passthrough(let backingID):
                    rc = shim_reply_open_passthrough(req, opened.handle, backingID, opened.readOnly ? 1 : 0)
                case .cached, .direct:
                    shim_fi_set_open_flags(&request.info, opened.handle, opened.keepCache ? 1 : 0, opened.mode == .direct ? 1 : 0, 0)
                    shim_fi_set_noflush(&request.info, opened.readOnly ? 1 : 0)
                    rc = fuse_reply_open(req, &request.info)
                }
                if rc != 0 { b.fs.release(handle: opened.handle) }
            }
        }
    }
    ops.read = { req, ino, size, offset, fi in
        let b = Bridge.from(req)
        b.handle(req, "read \(ino)") {
            let source = try b.fs.read(handle: shim_fi_fh(fi), size: size, offset: Int64(offset))
            // The descriptor stays open (pinned by `source`) until the reply is spliced.
            withExtendedLifetime(source) {
                _ = shim_reply_fd(req, source.file.raw, off_t(source.offset), source.size)
            }
        }
    }
    ops.lseek = { req, ino, offset, whence, fi in
        let b = Bridge.from(req)
        b.handle(req, "lseek \(ino)") {
            fuse_reply_lseek(req, off_t(try b.fs.seek(handle: shim_fi_fh(fi), offset: Int64(offset), whence: whence)))
        }
    }
    ops.release = { req, _, fi in
        Bridge.from(req).fs.release(handle: shim_fi_fh(fi))
        fuse_reply_err(req, 0)
    }
    ops.create = { req, parent, name, mode, fi in
        let b = Bridge.from(req)
        b.handle(req, "create \(display(name)) in \(parent)") {
            let (attributes, opened) = try b.fs.create(parent: b.ino(parent), name: bytes(name), mode: UInt32(mode), flags: shim_fi_flags(fi),
                                                       pid: caller(req))
            guard let opened else { throw FSError(EIO, "create did not open") }
            // Direct I/O for a file created to be written only (the core decides: `create`).
            shim_fi_set_open_flags(fi, opened.handle, opened.keepCache ? 1 : 0, opened.mode == .direct ? 1 : 0, 0)
            var e = b.entry(attributes, created: true)
            if fuse_reply_create(req, &e, fi) != 0 { b.fs.release(handle: opened.handle) }
        }
    }
    ops.mknod = { req, parent, name, mode, _ in
        let b = Bridge.from(req)
        b.handle(req, "mknod \(display(name)) in \(parent)") {
            b.replyEntry(req, try b.fs.mknod(parent: b.ino(parent), name: bytes(name), mode: UInt32(mode)))
        }
    }
    ops.mkdir = { req, parent, name, mode in
        let b = Bridge.from(req)
        b.handle(req, "mkdir \(display(name)) in \(parent)") {
            b.replyEntry(req, try b.fs.mkdir(parent: b.ino(parent), name: bytes(name), mode: UInt32(mode), pid: caller(req)))
        }
    }
    ops.unlink = { req, parent, name in
        let b = Bridge.from(req)
        b.handle(req, "unlink \(display(name)) in \(parent)") {
            try b.fs.unlink(parent: b.ino(parent), name: bytes(name))
            fuse_reply_err(req, 0)
        }
    }
    ops.rmdir = { req, parent, name in
        let b = Bridge.from(req)
        b.handle(req, "rmdir \(display(name)) in \(parent)") {
            try b.fs.rmdir(parent: b.ino(parent), name: bytes(name))
            fuse_reply_err(req, 0)
        }
    }
    ops.rename = { req, parent, name, newParent, newName, flags in
        let b = Bridge.from(req)
        b.handle(req, "rename \(display(name)) in \(parent) to \(display(newName)) in \(newParent)") {
            try b.fs.rename(parent: b.ino(parent), name: bytes(name), newParent: b.ino(newParent), newName: bytes(newName), flags: UInt32(flags))
            fuse_reply_err(req, 0)
        }
    }
    ops.link = { req, ino, newParent, newName in
        let b = Bridge.from(req)
        b.handle(req, "link \(ino) as \(display(newName)) in \(newParent)") {
            b.replyEntry(req, try b.fs.link(ino: b.ino(ino), newParent: b.ino(newParent), newName: bytes(newName)))
        }
    }
    ops.symlink = { req, target, parent, name in
        let b = Bridge.from(req)
        b.handle(req, "symlink \(display(name)) in \(parent)") {
            b.replyEntry(req, try b.fs.symlink(parent: b.ino(parent), name: bytes(name), target: bytes(target)))
        }
    }
    ops.readlink = { req, ino in
        let b = Bridge.from(req)
        b.handle(req, "readlink \(ino)") {
            // The target holds no NUL (the kernel refuses one): it is one C string.
            let target = try b.fs.readlink(b.ino(ino))
            _ = (target + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { fuse_reply_readlink(req, $0.baseAddress) } }
        }
    }
    ops.write = { req, ino, buffer, size, offset, fi in
        let b = Bridge.from(req)
        b.handle(req, "write \(ino)") {
            // Answered before its bytes are hashed: the buffer is the request's until this
            // returns. Not through the ring, whose reply is copied over the bytes.
            let bytes = UnsafeRawBufferPointer(start: buffer, count: size)
            if albumfs_ring_in_request() != 0 {
                fuse_reply_write(req, try b.fs.write(handle: shim_fi_fh(fi), bytes: bytes, offset: Int64(offset)))
            } else {
                try b.fs.write(handle: shim_fi_fh(fi), bytes: bytes, offset: Int64(offset)) { fuse_reply_write(req, $0) }
            }
        }
    }
    ops.copy_file_range = { req, _, inOffset, inFi, _, outOffset, outFi, length, _ in
        let b = Bridge.from(req)
        b.handle(req, "copy_file_range") {
            let n = try b.fs.copyFileRange(from: shim_fi_fh(inFi), offset: Int64(inOffset), to: shim_fi_fh(outFi),
                                           offset: Int64(outOffset), length: length)
            fuse_reply_write(req, n)
        }
    }
    ops.fallocate = { req, ino, mode, offset, length, fi in
        let b = Bridge.from(req)
        b.handle(req, "fallocate \(ino)") {
            try b.fs.fallocate(handle: shim_fi_fh(fi), mode: mode, offset: Int64(offset), length: Int64(length))
            fuse_reply_err(req, 0)
        }
    }
    ops.flush = { req, ino, fi in
        let b = Bridge.from(req)
        b.handle(req, "close of \(ino)") {
            let closed = Result { try b.fs.flush(handle: shim_fi_fh(fi), pid: caller(req)) }
            b.waitForQueuedNames()
            try closed.get()
            fuse_reply_err(req, 0)
        }
    }
    ops.fsync = { req, ino, _, fi in
        let b = Bridge.from(req)
        b.handle(req, "fsync \(ino)") {
            try b.fs.fsync(handle: shim_fi_fh(fi))
            fuse_reply_err(req, 0)
        }
    }
    ops.fsyncdir = { req, _, _, _ in fuse_reply_err(req, 0) }
    ops.setattr = { req, ino, attr, toSet, fi in
        let b = Bridge.from(req)
        b.handle(req, "setattr \(ino)") {
            var changes = FileSystem.AttributeChanges()
            if let attr {
                if toSet & FUSE_SET_ATTR_SIZE != 0 { changes.size = Int64(attr.pointee.st_size) }
                if toSet & FUSE_SET_ATTR_MODE != 0 { changes.mode = attr.pointee.st_mode }
                // A time asked for: now, or the one given (held to the library's range).
                func time(now: Int32, given: Int32, _ t: timespec) -> Int64? {
                    if toSet & now != 0 { return nowNanoseconds() }
                    return toSet & given != 0 ? storedNanoseconds(seconds: Int64(t.tv_sec), nanoseconds: Int64(t.tv_nsec)) : nil
                }
                changes.mtimeNs = time(now: FUSE_SET_ATTR_MTIME_NOW, given: FUSE_SET_ATTR_MTIME, attr.pointee.st_mtim)
                changes.atimeNs = time(now: FUSE_SET_ATTR_ATIME_NOW, given: FUSE_SET_ATTR_ATIME, attr.pointee.st_atim)
            }
            if toSet & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID) != 0 { changes.owner = true }
            if fi != nil { changes.handle = shim_fi_fh(fi) }
            changes.pid = caller(req)
            b.replyAttr(req, b.fs.kernelView(try b.fs.setattr(b.ino(ino), node: ino, changes), node: ino).attributes)
        }
    }
    ops.setxattr = { req, ino, name, value, size, flags in
        let b = Bridge.from(req)
        b.handle(req, "setxattr \(display(name)) of \(ino)") {
            let data = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
            try b.fs.setxattr(b.ino(ino), name: display(name), value: data, flags: flags, pid: caller(req))
            fuse_reply_err(req, 0)
        }
    }
    ops.removexattr = { req, ino, name in
        let b = Bridge.from(req)
        b.handle(req, "removexattr \(display(name)) of \(ino)") {
            try b.fs.removexattr(b.ino(ino), name: display(name), pid: caller(req))
            fuse_reply_err(req, 0)
        }
    }
    ops.opendir = { req, ino, fi in
        let b = Bridge.from(req)
        b.handle(req, "opendir \(ino)") {
            _ = try b.fs.getattr(b.ino(ino))
            // The kernel keeps listings (cache_readdir) until the core invalidates the
            // folder's inode after a change. The handle names the listing to the core.
            let listing = b.fs.openListing(b.ino(ino))
            shim_fi_set_open_flags(fi, listing, 1, 0, 1)
            // An open the kernel gave up on (interrupted) gets no RELEASEDIR.
            if fuse_reply_open(req, fi) != 0 { b.fs.closeListing(listing) }
        }
    }
    ops.releasedir = { req, _, fi in
        Bridge.from(req).fs.closeListing(shim_fi_fh(fi))
        fuse_reply_err(req, 0)
    }
    ops.readdir = { req, ino, size, offset, fi in
        let b = Bridge.from(req)
        b.handle(req, "readdir \(ino)") { try readdir(b, req, b.ino(ino), size, Int64(offset), shim_fi_fh(fi), plus: false) }
    }
    ops.readdirplus = { req, ino, size, offset, fi in
        let b = Bridge.from(req)
        b.handle(req, "readdirplus \(ino)") { try readdir(b, req, b.ino(ino), size, Int64(offset), shim_fi_fh(fi), plus: true) }
    }
    ops.statfs = { req, _ in
        let b = Bridge.from(req)
        b.handle(req, "statfs") {
            let s = try b.fs.statfs()
            var v = statvfs()
            v.f_bsize = UInt(s.blockSize)
            v.f_frsize = UInt(s.fragmentSize)
            v.f_blocks = UInt(s.blocks)
            v.f_bfree = UInt(s.blocksFree)
            v.f_bavail = UInt(s.blocksAvailable)
            v.f_files = UInt(s.files)
            v.f_ffree = UInt(s.filesFree)
            v.f_favail = UInt(s.filesFree)
            v.f_namemax = UInt(s.nameMax)
            fuse_reply_statfs(req, &v)
        }
    }
    ops.getxattr = { req, ino, name, size in
        let b = Bridge.from(req)
        b.handle(req, "getxattr \(display(name)) of \(ino)") {
            let value = try b.fs.getxattr(b.ino(ino), name: display(name))
            try replyXattr(req, value, size)
        }
    }
    ops.listxattr = { req, ino, size in
        let b = Bridge.from(req)
        b.handle(req, "listxattr \(ino)") {
            var list: [UInt8] = []
            for name in try b.fs.listxattr(b.ino(ino)) { list += Array(name.utf8) + [0] }
            try replyXattr(req, list, size)
        }
    }
    return ops
}

/// getxattr and listxattr: size 0 asks for the length; too small a buffer is ERANGE.
private func replyXattr(_ req: fuse_req_t?, _ value: [UInt8], _ size: Int) throws {
    if size == 0 {
        fuse_reply_xattr(req, value.count)
    } else if value.count > size {
        throw FSError(ERANGE, "attribute value larger than the buffer", logged: false)
    } else {
        value.withUnsafeBytes { fuse_reply_buf(req, $0.baseAddress?.assumingMemoryBound(to: CChar.self), value.count) }
    }
}

/// Fills one readdir buffer from entries after `offset`. Cookies are stable keys, so
/// fetching more entries than fit costs nothing but the query.
private func readdir(_ b: Bridge, _ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int, _ offset: Int64, _ listing: UInt64,
                     plus: Bool) throws {
    let estimate = max(1, size / (plus ? 160 : 40))
    let entries = try b.fs.readdir(ino, after: offset, limit: estimate, listing: listing)
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
    defer { buffer.deallocate() }
    var used = 0
    var last: Int64?
    for entry in entries {
        let needed: Int = entry.name.withCString { name in
            if plus {
                var e: fuse_entry_param
                if let attributes = entry.attributes {
                    e = b.entry(attributes)
                } else {
                    // Attributes that would mean waiting (a thumbnail not made yet): node id
                    // 0 lists the name and number without a lookup; a stat makes it.
                    e = fuse_entry_param()
                    e.attr.st_ino = UInt(entry.ino)
                    e.attr.st_mode = Glibc.S_IFREG
                }
                return fuse_add_direntry_plus(req, buffer + used, size - used, name, &e, off_t(entry.cookie))
            } else {
                var st = Glibc.stat()
                if let attributes = entry.attributes { st = b.stat(attributes) } else {
                    st.st_ino = UInt(entry.ino)
                    st.st_mode = Glibc.S_IFREG
                }
                return fuse_add_direntry(req, buffer + used, size - used, name, &st, off_t(entry.cookie))
            }
        }
        if needed > size - used { break }
        used += needed
        last = entry.cookie
    }
    if offset == 0 { TestHold.listings.holdIfAsked(ino) }
    // A full buffer: the kernel will ask for the page after it once it has taken this
    // one in, so that page is read meanwhile (asked for before the reply, so that the
    // request for it finds the read under way).
    if let last, last != entries.last?.cookie || entries.count >= estimate {
        b.fs.listAhead(ino, after: last, limit: estimate)
    }
    fuse_reply_buf(req, buffer, used)
}
