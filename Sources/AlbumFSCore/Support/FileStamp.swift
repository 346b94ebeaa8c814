import AlbumCore
import Glibc

/// A file as `fstat` found it: which file (device and inode) and its size, mtime and
/// ctime. Every write and truncation moves the ctime, so an equal stamp says that
/// nothing changed the file between two looks, but for a change within one tick of the
/// kernel's coarse clock where timestamps are not multigrain (before Linux 6.13, or on
/// other file systems than ext4, XFS, Btrfs and tmpfs: `ClosedDigests.timesAreFineGrained`).
struct FileStamp: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let mtimeNs: Int64
    let ctimeNs: Int64

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        mtimeNs = st.modificationNanoseconds
        ctimeNs = st.changeNanoseconds
    }
}
