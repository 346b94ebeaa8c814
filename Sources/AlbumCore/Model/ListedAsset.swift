/// An asset as a folder listing shows it: its name, its place in the listing and what
/// `stat` says of it. Listings read these nine columns instead of the thirty-two of
/// `Asset`: a listing of All Photos reads every row of the view, and decoding columns it
/// never used (the digest, the camera, the coordinates: six strings a row) was most of
/// the daemon's time in a cold `ls` or `find`.
public struct ListedAsset: Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var size: Int64
    public var sortKey: Int64
    /// st_mtime: the mtime a user or a save set, else the capture date.
    public var mtimeNanoseconds: Int64
    public var changedNs: Int64
    /// Number of album memberships.
    public var links: Int
    /// Permission bits a user set; nil for the default.
    public var mode: UInt32?
}

/// A type read from a row of `assets a` (`SELECT \(columns) FROM assets a`).
public protocol AssetRow {
    static var columns: String { get }
    init(row: Row, first: Int32)
}

extension Asset: AssetRow {
    /// The listing's view of this asset.
    public var listed: ListedAsset {
        ListedAsset(id: id, name: name, size: size, sortKey: sortKey, mtimeNanoseconds: mtimeNanoseconds,
                    changedNs: changedNs, links: links, mode: mode)
    }
}

extension ListedAsset: AssetRow {
    public static let columns = "a.id, a.name, a.size, a.sort_key, a.mtime_ns, a.taken_at, a.changed_ns, a.links, a.mode"

    public init(row: Row, first: Int32 = 0) {
        let c = first
        id = row.int64(c)
        name = row.text(c + 1)
        size = row.int64(c + 2)
        sortKey = row.int64(c + 3)
        // As Asset.mtimeNanoseconds.
        mtimeNanoseconds = row.optionalInt64(c + 4) ?? storedNanoseconds(seconds: row.int64(c + 5))
        changedNs = row.int64(c + 6)
        links = row.int(c + 7)
        mode = row.optionalInt(c + 8).map { UInt32(truncatingIfNeeded: $0) }
    }
}
