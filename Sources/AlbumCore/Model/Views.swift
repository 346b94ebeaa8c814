/// The smart albums of PRODUCT.md section 2, each a query of the library.
public enum SmartAlbum: Int, CaseIterable, Sendable {
    case favorites = 0, videos, screenshots, selfies, panoramas, livePhotos, raw, animated
    case recentlyAdded, hidden, recentlyDeleted

    public var folderName: String {
        switch self {
        case .favorites: return "Favorites"
        case .videos: return "Videos"
        case .screenshots: return "Screenshots"
        case .selfies: return "Selfies"
        case .panoramas: return "Panoramas"
        case .livePhotos: return "Live Photos"
        case .raw: return "RAW"
        case .animated: return "Animated"
        case .recentlyAdded: return "Recently Added"
        case .hidden: return "Hidden"
        case .recentlyDeleted: return "Recently Deleted"
        }
    }

    public static let recentlyAddedSeconds: Int64 = 30 * 86400
}

/// A folder whose entries are assets chosen by a query, listed by `sort_key`.
public enum AssetView: Sendable, Equatable {
    case allPhotos
    case smart(SmartAlbum)
    /// By Date/YYYY/YYYY-MM/YYYY-MM-DD: yyyymmdd.
    case day(Int)

    static let visible = "a.trashed_at IS NULL AND a.hidden = 0"

    /// The WHERE clause of the view; each matches a partial index of the schema.
    func predicate(now: Int64) -> String {
        switch self {
        case .allPhotos: return Self.visible
        case .day(let day): return "a.taken_day = \(day) AND \(Self.visible)"
        case .smart(let album):
            switch album {
            case .favorites: return "a.favorite = 1 AND \(Self.visible)"
            case .videos: return "a.media_type = 2 AND \(Self.visible)"
            case .screenshots: return kinds(.screenshot)
            case .selfies: return kinds(.selfie)
            case .panoramas: return kinds(.panorama)
            case .livePhotos: return "a.media_type = 1 AND " + kinds(.live)
            case .raw: return kinds(.raw)
            case .animated: return kinds(.animated)
            case .recentlyAdded: return "a.added_at >= \(now - SmartAlbum.recentlyAddedSeconds) AND \(Self.visible)"
            case .hidden: return "a.hidden = 1 AND a.trashed_at IS NULL"
            case .recentlyDeleted: return "a.trashed_at IS NOT NULL"
            }
        }
    }

    private func kinds(_ kind: MediaKinds) -> String {
        "a.kinds != 0 AND (a.kinds & \(kind.rawValue)) != 0 AND \(Self.visible)"
    }

    /// Whether an asset belongs in the view.
    public func contains(_ asset: Asset, now: Int64 = nowSeconds()) -> Bool {
        let visible = asset.trashedAt == nil && !asset.hidden
        switch self {
        case .allPhotos: return visible
        case .day(let day): return visible && asset.takenDay == day
        case .smart(let album):
            switch album {
            case .favorites: return visible && asset.favorite
            case .videos: return visible && asset.mediaType == .video
            case .screenshots: return visible && asset.kinds.contains(.screenshot)
            case .selfies: return visible && asset.kinds.contains(.selfie)
            case .panoramas: return visible && asset.kinds.contains(.panorama)
            case .livePhotos: return visible && asset.mediaType == .photo && asset.kinds.contains(.live)
            case .raw: return visible && asset.kinds.contains(.raw)
            case .animated: return visible && asset.kinds.contains(.animated)
            case .recentlyAdded: return visible && asset.addedAt >= now - SmartAlbum.recentlyAddedSeconds
            case .hidden: return asset.hidden && asset.trashedAt == nil
            case .recentlyDeleted: return asset.trashedAt != nil
            }
        }
    }
}

extension LibraryRecords {
    /// Assets of a view in listing order, after sort key `after`.
    public func assets(in view: AssetView, after: Int64 = -1, limit: Int = Int.max) throws -> [Asset] {
        try rows(in: view, after: after, limit: limit)
    }

    /// `assets(in:)` with only what a listing shows of each.
    public func listedAssets(in view: AssetView, after: Int64 = -1, limit: Int = Int.max) throws -> [ListedAsset] {
        try rows(in: view, after: after, limit: limit)
    }

    private func rows<T: AssetRow>(in view: AssetView, after: Int64, limit: Int) throws -> [T] {
        let sql = "SELECT \(T.columns) FROM assets a WHERE \(view.predicate(now: nowSeconds())) AND a.sort_key > ? ORDER BY a.sort_key LIMIT ?"
        return try db.query(sql, after, limit) { T(row: $0, first: 0) }
    }

    /// The asset called `name` in a view, if it is there.
    public func asset(named name: String, in view: AssetView) throws -> Asset? {
        let sql = "SELECT \(Asset.columns) FROM assets a WHERE a.name_key = ? AND \(view.predicate(now: nowSeconds()))"
        return try db.first(sql, Names.key(name)) { Asset(row: $0) }
    }

    public func count(in view: AssetView) throws -> Int {
        Int(try db.scalar("SELECT count(*) FROM assets a WHERE \(view.predicate(now: nowSeconds()))") ?? 0)
    }

    /// Members of an album in listing order, after sort key `after`: the membership and
    /// its asset. Trashed and hidden assets are not listed; in the desktop trash's
    /// `files/` (`trashed`), only the trashed ones are.
    public func members(ofAlbum album: Int64, after: Int64 = -1, limit: Int = Int.max,
                        trashed: Bool = false) throws -> [(Membership, Asset)] {
        try memberRows(ofAlbum: album, after: after, limit: limit, trashed: trashed)
    }

    /// `members(ofAlbum:)` with only what a listing shows of each asset.
    public func listedMembers(ofAlbum album: Int64, after: Int64 = -1, limit: Int = Int.max,
                              trashed: Bool = false) throws -> [(Membership, ListedAsset)] {
        try memberRows(ofAlbum: album, after: after, limit: limit, trashed: trashed)
    }

    private func memberRows<T: AssetRow>(ofAlbum album: Int64, after: Int64, limit: Int, trashed: Bool) throws -> [(Membership, T)] {
        try db.query("""
            SELECT m.id, m.name, m.sort_key, m.asset_id, \(T.columns) FROM memberships m JOIN assets a ON a.id = m.asset_id
            WHERE m.album_id = ? AND m.sort_key > ? AND \(trashed ? "a.trashed_at IS NOT NULL" : AssetView.visible)
            ORDER BY m.sort_key LIMIT ?
            """, album, after, limit) { row in
            (Membership(id: row.int64(0), albumID: album, assetID: row.int64(3), name: row.text(1), sortKey: row.int64(2)),
             T(row: row, first: 4))
        }
    }

    /// An album entry by its id, with its asset (whatever the asset's state).
    public func membership(id: Int64) throws -> (Membership, Asset)? {
        try db.first("""
            SELECT m.id, m.name, m.sort_key, m.album_id, \(Asset.columns) FROM memberships m JOIN assets a ON a.id = m.asset_id
            WHERE m.id = ?
            """, id) { row in
            let asset = Asset(row: row, first: 4)
            return (Membership(id: row.int64(0), albumID: row.int64(3), assetID: asset.id, name: row.text(1), sortKey: row.int64(2)), asset)
        }
    }

    /// The member of an album called `name` (any case or normalization), if visible.
    public func member(named name: String, ofAlbum album: Int64, trashed: Bool = false) throws -> (Membership, Asset)? {
        try db.first("""
            SELECT m.id, m.name, m.sort_key, \(Asset.columns) FROM memberships m JOIN assets a ON a.id = m.asset_id
            WHERE m.album_id = ? AND m.name_key = ? AND \(trashed ? "a.trashed_at IS NOT NULL" : AssetView.visible)
            """, album, Names.key(name)) { row in
            let asset = Asset(row: row, first: 3)
            return (Membership(id: row.int64(0), albumID: album, assetID: asset.id, name: row.text(1), sortKey: row.int64(2)), asset)
        }
    }

    // MARK: date folders

    /// Years that have visible assets, ascending. Walks the day index one year at a
    /// time, so the cost grows with the number of years, not of assets.
    public func years() throws -> [Int] {
        try distinctDayPrefixes(from: 0, to: 99_999_999, divisor: 10000)
    }

    /// Months (yyyymm) of a year that have visible assets.
    public func months(ofYear year: Int) throws -> [Int] {
        try distinctDayPrefixes(from: year * 10000, to: year * 10000 + 9999, divisor: 100)
    }

    /// Days (yyyymmdd) of a month (yyyymm) that have visible assets.
    public func days(ofMonth month: Int) throws -> [Int] {
        try distinctDayPrefixes(from: month * 100, to: month * 100 + 99, divisor: 1)
    }

    private func distinctDayPrefixes(from low: Int, to high: Int, divisor: Int) throws -> [Int] {
        var result: [Int] = []
        var cursor = low
        while cursor <= high {
            guard let day = try db.scalar("SELECT min(a.taken_day) FROM assets a WHERE a.taken_day >= ? AND a.taken_day <= ? AND \(AssetView.visible)",
                                          cursor, high) else { break }
            let prefix = Int(day) / divisor
            result.append(prefix)
            cursor = (prefix + 1) * divisor
        }
        return result
    }

    /// Whether a day (yyyymmdd), month (yyyymm) or year has visible assets.
    public func hasAssets(dayPrefix: Int, divisor: Int) throws -> Bool {
        let low = dayPrefix * divisor, high = (dayPrefix + 1) * divisor - 1
        return try db.scalar("SELECT 1 FROM assets a WHERE a.taken_day >= ? AND a.taken_day <= ? AND \(AssetView.visible) LIMIT 1",
                             low, high) != nil
    }

    /// Whether a photo of those days is in Recently Deleted (a date folder it can be
    /// restored to). Reads the trashed photos only, which Recently Deleted keeps few of.
    public func hasTrashedAssets(dayPrefix: Int, divisor: Int) throws -> Bool {
        let low = dayPrefix * divisor, high = (dayPrefix + 1) * divisor - 1
        return try db.scalar("SELECT 1 FROM assets a WHERE a.trashed_at IS NOT NULL AND a.taken_day >= ? AND a.taken_day <= ? LIMIT 1",
                             low, high) != nil
    }
}
