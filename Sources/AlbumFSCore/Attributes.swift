import AlbumCore
import Glibc

/// File attributes as the filesystem reports them (a `struct stat`, minus the C).
public struct Attributes: Sendable, Equatable {
    public enum Kind: Sendable { case directory, file }

    public var ino: UInt64
    public var kind: Kind
    public var permissions: UInt32
    public var nlink: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: Int64
    public var blocks: Int64
    public var atimeNs: Int64
    public var mtimeNs: Int64
    public var ctimeNs: Int64

    public var mode: UInt32 { (kind == .directory ? UInt32(S_IFDIR) : UInt32(S_IFREG)) | permissions }

    /// 512-byte blocks a file of `size` bytes takes on a filesystem of 4 KiB blocks.
    static func blocks(forSize size: Int64) -> Int64 { (size + 4095) / 4096 * 8 }
}

/// What the mount was asked for: ownership, permissions, read-only, thumbnail size.
public struct MountOptions: Sendable {
    public var uid: UInt32 = getuid()
    public var gid: UInt32 = getgid()
    /// Applied to every mode the mount reports.
    public var umask: UInt32 = 0o022
    public var readOnly = false
    public var thumbnailSize = 256
    /// How long the kernel may cache names and attributes. Every change made through
    /// the mount invalidates what it touches, so this can be long.
    public var cacheSeconds: Double = 3600
    /// FUSE passthrough for read-only opens, when the kernel offers it: reads at the
    /// speed of the blob itself, but a photo open for reading cannot be replaced until
    /// it is closed (ETXTBSY). Default: on for read-only mounts, where nothing can be
    /// replaced anyway; off otherwise (`-o passthrough` / `-o nopassthrough`).
    public var passthrough: Bool?

    public var usesPassthrough: Bool { passthrough ?? readOnly }

    public init() {}
}
