import AlbumCore

/// Which kernel inode (FUSE node id) stands for an inode number now.
///
/// The kernel reads a file in passthrough from one backing file per kernel inode, and
/// while any open of a kernel inode is in passthrough it refuses every open of it that
/// is not in passthrough with that same file (`IOMode`). A photo read that way would
/// keep writers out, and keep a new version out of passthrough, for as long as one
/// reader holds it. So a photo whose kernel inode is held by readers of its old bytes
/// moves to a new kernel inode: the same inode number (`st_ino`, what every tool and
/// NFS client sees) with a generation in bits its kind of number never uses (`Node`):
/// 48 to 55 for photos and thumbnails, 52 to 55 for shared thumbnails (whose bits 50
/// and 51 say which one). Its names are dropped from the kernel's cache everywhere, so paths lead to
/// the new kernel inode, while the readers keep reading the version they opened from the
/// old one. It moves when a save lands while the old kernel inode is held
/// (`movePastReaders`), or when an open finds it held (`openElsewhere`: ESTALE, and the
/// kernel looks the path up again).
///
/// Node ids are handed out only by this daemon and only for its kernel's life: the
/// generations live in memory. A node id of any generation still names its inode (an
/// NFS file handle keeps working after an edit, and after a restart).
final class KernelNodes: Sendable {
    /// Where a number's generation goes in its node ids (nil: it never moves).
    private struct Field {
        let shift: UInt64
        let count: UInt64
        var mask: UInt64 { (count - 1) << shift }
    }

    private static func field(of ino: UInt64) -> Field? {
        switch ino & Node.tagMask {
        case 0, Node.thumbnailTag: return Field(shift: 48, count: 256)
        case Node.sharedThumbnailTag: return Field(shift: 52, count: 16)
        default: return nil
        }
    }

    private let generations = Locked([UInt64: UInt64]())

    /// The inode number a node id stands for. Only photos (objects), thumbnails and
    /// shared thumbnails have generations; other numbers use these bits themselves.
    static func inode(of node: UInt64) -> UInt64 {
        guard let field = field(of: node) else { return node }
        return node & ~field.mask
    }

    /// The node id of `ino` at `generation`.
    private static func node(_ ino: UInt64, _ generation: UInt64?) -> UInt64 {
        guard let generation, let field = field(of: ino) else { return ino }
        return ino | generation << field.shift
    }

    /// The node id that stands for `ino` now.
    func node(of ino: UInt64) -> UInt64 {
        generations.withLock { $0.isEmpty ? ino : Self.node(ino, $0[ino]) }
    }

    /// Moves `ino` to a new node id, unless it already has moved past `node` (two opens
    /// that found the same conflict move it once): the next generation that no open file
    /// holds (`inUse`), so that the new kernel inode is a fresh one.
    /// `then`: called with the new node id before anyone else can be given it.
    func advance(_ ino: UInt64, from node: UInt64, inUse: (UInt64) -> Bool, then: (UInt64) -> Void = { _ in }) {
        generations.withLock { g in
            guard Self.node(ino, g[ino]) == node else { return }
            then(Self.next(ino, &g, inUse: inUse))
        }
    }

    /// A writer's open that the kernel would refuse on `node` is sent to a kernel inode it
    /// can get into: the one `ino` stands for now, if it has moved past `node` and
    /// `reserve` holds it for the writer (no reader holds it in passthrough); else a new
    /// one, which `reserve` is called with. Both before anyone else can be given it: a
    /// kernel inode held by readers when the kernel's one retry comes fails the writer
    /// with `ESTALE`.
    func sendWriter(_ ino: UInt64, from node: UInt64, inUse: (UInt64) -> Bool, reserve: (UInt64) -> Bool) {
        generations.withLock { g in
            let current = Self.node(ino, g[ino])
            if current != node && reserve(current) { return }
            _ = reserve(Self.next(ino, &g, inUse: inUse))
        }
    }

    /// Moves `ino` to the next generation that no open file holds (`inUse`), so that the
    /// new kernel inode is a fresh one; returns its node id.
    private static func next(_ ino: UInt64, _ g: inout [UInt64: UInt64], inUse: (UInt64) -> Bool) -> UInt64 {
        guard let field = field(of: ino) else { return ino }
        var generation = g[ino] ?? 0
        for _ in 1..<field.count {
            generation = (generation + 1) % field.count
            if !inUse(node(ino, generation)) { break }
        }
        g[ino] = generation
        return node(ino, generation)
    }
}

extension FileSystem {
    /// The kernel's node id for inode `ino` now (the bridge hands it out in every entry).
    public func nodeID(of ino: UInt64) -> UInt64 { kernelNodes.node(of: ino) }

    /// The inode number a node id from the kernel stands for.
    public static func inode(ofNodeID node: UInt64) -> UInt64 { KernelNodes.inode(of: node) }

    /// A new version of `ino` landed: if readers of the old one hold its kernel inode,
    /// in passthrough (whose backing file the kernel lets no other open change) or
    /// cached (whose pages they fill with the old bytes, which the next opens would
    /// read), the next lookups lead to a new kernel inode (the caller drops the names,
    /// `afterChange` with the photo as it was), and the old one's attributes are dropped
    /// (an NFS handle may still lead there; `kernelView` answers the readers' size).
    func movePastReaders(_ ino: UInt64) {
        let node = kernelNodes.node(of: ino)
        guard handles.heldByReaders(node) else { return }
        kernelNodes.advance(ino, from: node, inUse: handles.inUse)
        // Every cached name stale before the reply (the caller's drop of the photo's
        // names comes after it): a `stat` by path right after reaches the new one.
        invalidate([.node(node), .allNames])
    }

    /// Handles of photo `asset` that a rename handed to another file (`Writer.becamePlain`),
    /// or that kept the version a save by rename replaced (`Writer.keepReplaced`) or their
    /// own superseded bytes (`Close.supersedePendingBytes`), stay on the kernel inodes
    /// they were opened through: the photo moves to new ones,
    /// its names dropped from the kernel's cache, so that its next lookups and opens share
    /// neither pages nor a size with them, and the old ones report what the handles write
    /// (`kernelView`).
    func moveAway(_ asset: Asset, from writer: Writer) {
        var moved = false
        for node in handles.nodes(of: writer) {
            let ino = KernelNodes.inode(of: node)
            guard kernelNodes.node(of: ino) == node else { continue }
            kernelNodes.advance(ino, from: node, inUse: handles.inUse)
            invalidate([.node(node)])
            moved = true
        }
        if moved { forgetNames(of: asset) }
    }

    /// The writer of the handles that kernel inode `node` serves now that its photo has
    /// left it (`moveAway`); nil for the current kernel inode of its number.
    func writerLeftOn(_ node: UInt64) -> Writer? {
        guard kernelNodes.node(of: KernelNodes.inode(of: node)) != node else { return nil }
        return handles.writer(on: node)
    }

    /// The last passthrough reader, or the last handle open for writing, of a kernel inode
    /// that its photo has left is gone: the kernel forgets the attributes it reported (the
    /// old version's size, or the size of what the handles wrote), so that a client still
    /// holding that node id (an NFS handle) sees the photo as it is now.
    func forgetLeftKernelInode(_ file: OpenFile) {
        guard file.node != kernelNodes.node(of: file.ino) else { return }
        switch file.mode {
        case .passthrough: guard !handles.inPassthrough(file.node) else { return }
        case .cached, .direct:
            if file.readsVersion {
                guard handles.cachedReaderFile(on: file.node) == nil else { return }
            } else {
                guard file.writes, !handles.writesThrough(file.node) else { return }
            }
        }
        invalidate([.node(file.node)])
    }
}
