import AlbumCore

/// Operations on a plain file's names (mv, rm, ln), and changes of a file's mode and
/// times (chmod, touch), wait for a close of it in progress.
///
/// Such a close may be making the file a photo (its plain-file row goes, an asset with
/// the same number comes) with the name, folder, mode and times it had when the close
/// began, or stamping a photo's next version with its write time. A rename, removal,
/// link or change committed in the middle would be undone by it, or make it fail: the
/// photo landed back under the old name, a link's new name went with the plain-file row,
/// the close failed with EEXIST because another file had taken the old name, a mode or
/// mtime set was lost (seen with `plain-stress.py photos=` and `close-races.py`). The
/// kernel already keeps write(2) and these operations on one file apart (its inode
/// lock), but not a close, so the daemon does, with the writer's `io`.
extension FileSystem {
    /// Runs `body` with what `lookup` finds, holding the `io` of the writer of every plain
    /// file found (`files`; of every photo too, with `photosToo`): no close of them is in
    /// progress meanwhile. The lookup is made again once those are held, since a close
    /// that ended meanwhile may have changed what the names are; when that changed which
    /// files have writers, the locks are let go and it starts over (a photo now has the
    /// writer the plain file had, and the photo's operations take its `io` themselves).
    ///
    /// Another host's close is no writer of this one: what it changed between the lookup
    /// and `body`'s transaction shows there (`Transaction.expectUnchanged` throws
    /// `changedMeanwhile`), and it starts over from the lookup, up to twenty times: six
    /// processes racing on twelve names through two hosts (plain-stress.py) used up three
    /// tries now and then, and a call on a disk never fails so.
    func afterCloses<T, R>(of lookup: () throws -> T, files: (T) -> [Item?], photosToo: Bool = false,
                           _ body: (T) throws -> R) throws -> R {
        try againWhileChangedMeanwhile(tries: 20, { "\($0) changed meanwhile through another host: looking again" }) { _ in
            try afterThisHostsCloses(of: lookup, files: files, photosToo: photosToo, body)
        }
    }

    /// Runs `body` again while it throws `changedMeanwhile` (another host changed what it
    /// acts on between its look and its transaction), `tries` times at most; `body` is
    /// told when it runs for the last time. `saying` is the debug line of a try again.
    func againWhileChangedMeanwhile<R>(tries: Int, _ saying: (String) -> String,
                                       _ body: (_ lastTry: Bool) throws -> R) throws -> R {
        var attempt = 1
        while true {
            do {
                return try body(attempt == tries)
            } catch LibraryError.changedMeanwhile(let what) where attempt < tries {
                attempt += 1
                Log.debug(saying(what))
            }
        }
    }

    private func afterThisHostsCloses<T, R>(of lookup: () throws -> T, files: (T) -> [Item?], photosToo: Bool,
                                            _ body: (T) throws -> R) throws -> R {
        func held(_ found: T) -> [Writer] {
            var seen = Set<ObjectIdentifier>()
            return files(found).compactMap { item -> Writer? in
                switch item {
                case .plain(let file)?: return writers.get(UInt64(file.id))
                case .asset(let asset)? where photosToo: return writers.get(UInt64(asset.id))
                default: return nil
                }
            }.filter { seen.insert(ObjectIdentifier($0)).inserted }
        }
        var found = try lookup()
        for _ in 0..<3 {
            let holding = held(found)
            if holding.isEmpty { return try body(found) }
            let done: R? = try holdingIO(holding[...]) {
                let again = try lookup()
                guard held(again).map(ObjectIdentifier.init) == holding.map(ObjectIdentifier.init) else {
                    found = again
                    return nil
                }
                return try body(again)
            }
            if let done { return done }
        }
        // Closes ending over and over on these names: go on as before there were locks.
        return try body(found)
    }

    private func holdingIO<R>(_ held: ArraySlice<Writer>, _ body: () throws -> R) rethrows -> R {
        guard let first = held.first else { return try body() }
        return try first.io { try holdingIO(held.dropFirst(), body) }
    }
}
