/// Rows for benchmarks and scale tests: many assets that share one blob, inserted
/// through the same tables and keys as real imports, in large transactions.
public struct SyntheticAsset: Sendable {
    public var name: String
    public var takenAt: Int64
    public var mediaType: MediaType = .photo
    public var kinds: MediaKinds = []
    public var favorite = false
    public var hidden = false
    public var trashed = false

    public init(name: String, takenAt: Int64) {
        self.name = name
        self.takenAt = takenAt
    }
}

extension Library {
    /// Adds assets whose bytes are the existing blob `sha256` (imported before), each
    /// optionally in `album`. Names must be unique; they are not suffixed.
    public func addSyntheticAssets(_ items: [SyntheticAsset], sha256: String, album: Int64? = nil,
                                   batch: Int = 20_000) throws {
        guard let template = try read({ try $0.assets(withSHA256: sha256).first }) else {
            throw LibraryError.notFound("an asset with blob \(sha256) (import one first)")
        }
        var start = 0
        while start < items.count {
            let slice = items[start..<min(start + batch, items.count)]
            try write { tx in
                let db = tx.db
                let now = nowNanoseconds()
                for item in slice {
                    let id = try tx.allocateID()
                    let day = Library.dayNumber(instant: item.takenAt, offsetMinutes: 0)
                    try db.run("""
                        INSERT INTO assets(id, name, name_key, original_name, sha256, size, version, media_type, format, kinds,
                            taken_at, taken_offset, taken_day, taken_source, sort_key, width, height, orientation,
                            favorite, hidden, added_at, changed_ns, trashed_at)
                        VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, 0, ?, 1, ?, ?, ?, 1, ?, ?, ?, ?, ?)
                        """,
                        id, item.name, Names.key(item.name), item.name, sha256, template.size, item.mediaType.rawValue,
                        template.format, item.kinds.rawValue, item.takenAt, day, SortKey.make(takenAt: item.takenAt, id: id),
                        template.width, template.height, item.favorite, item.hidden, now / nanosecondsPerSecond, now,
                        item.trashed ? now / nanosecondsPerSecond : nil as Int64?)
                    try db.run("INSERT INTO versions(asset_id, version, sha256, size, created_at) VALUES (?, 1, ?, ?, ?)",
                               id, sha256, template.size, now / nanosecondsPerSecond)
                    if let album {
                        let membership = try db.first("""
                            INSERT INTO memberships(album_id, asset_id, name, name_key, sort_key, added_at)
                            VALUES (?, ?, ?, ?, 0, ?) RETURNING id
                            """, album, id, item.name, Names.key(item.name), now / nanosecondsPerSecond, map: { $0.int64(0) }) ?? 0
                        try db.run("UPDATE memberships SET sort_key = ? WHERE id = ?",
                                   SortKey.make(takenAt: item.takenAt, id: membership), membership)
                    }
                }
            }
            start += batch
        }
    }
}

/// A small, fast, seeded random generator (SplitMix64): synthetic data and the tests'
/// random drivers are the same from run to run.
public struct SplitMix: RandomNumberGenerator, Sendable {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
