import AlbumCore

/// The table each object id was found in last, for `item(_:in:)`. An inode number of a
/// photo, an album or a plain file is an object id, and the id alone does not say which
/// table holds it: asking the tables in turn costs a query per miss, which on PostgreSQL
/// is a round trip (a lookup in an album asked for an asset first, then for the album).
/// Ids are never reused, so the table found last is the table next time; only a plain
/// file that became a photo moves (its hint misses once and is corrected). Photos are
/// asked first anyway: only albums and plain files are remembered, so that a walk over
/// many photos never pushes the albums' hints out.
struct ObjectKinds {
    enum Kind: CaseIterable { case asset, album, plain }

    private var kinds: [UInt64: Kind] = [:]
    /// Beyond this many ids the hints start over (a few MB at most).
    static let limit = 65_536

    subscript(_ id: UInt64) -> Kind? {
        get { kinds[id] }
        set {
            if newValue != nil && kinds.count >= Self.limit { kinds.removeAll(keepingCapacity: true) }
            kinds[id] = newValue
        }
    }
}

extension FileSystem {
    /// The object `id` is: the table of its hint first, then the others.
    func object(_ id: Int64, in records: any LibraryRecords) throws -> Item? {
        let ino = UInt64(id)
        let hint = objectKinds.withLock { $0[ino] }
        for kind in [hint].compactMap({ $0 }) + ObjectKinds.Kind.allCases.filter({ $0 != hint }) {
            let found: Item?
            switch kind {
            case .asset: found = try records.asset(id: id).map { .asset($0) }
            case .album: found = try records.album(id: id).map { .album($0) }
            case .plain: found = try records.plainFile(id: id).map { .plain($0) }
            }
            if let found {
                // A photo needs no hint (it is asked first); a plain file that became one
                // loses its own.
                let remembered = kind == .asset ? nil : kind
                if remembered != hint { objectKinds.withLock { $0[ino] = remembered } }
                return found
            }
        }
        // A plain file that became a photo keeps its inode number.
        if let aliased = try records.aliasedAsset(ino: id), let asset = try records.asset(id: aliased) { return .asset(asset) }
        return nil
    }
}
