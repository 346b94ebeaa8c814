import AlbumCore

/// Operations on a plain file's names (mv, rm, ln) wait for a close of it in progress.
///
/// Such a close may be making the file a photo (its plain-file row goes, an asset with
/// the same number comes) or landing it under the name and in the folder it had when
/// the close began. A rename, removal or link that committed in the middle would be
/// undone by it, or make it fail: the photo landed back under the old name, a link's
/// new name went with the plain-file row, or the close failed with EEXIST because
/// another file had taken the old name (all three seen with `plain-stress.py
/// photos=`). The kernel already keeps write(2) and these operations on one file
/// apart (its inode lock), but not a close, so the daemon does, with the writer's `io`.
extension FileSystem {
    /// Runs `body` with what `lookup` finds, holding the `io` of the writer of every plain
    /// file found (`plainFiles`): no close of them is in progress meanwhile. The lookup is
    /// made again once those are held, since a close that ended meanwhile may have
    /// changed what the names are; when that changed which files have writers, the
    /// locks are let go and it starts over (a photo now has the writer the plain file
    /// had, and the photo's operations take its `io` themselves).
    func afterCloses<T, R>(of lookup: () throws -> T, plainFiles: (T) -> [PlainFile], _ body: (T) throws -> R) throws -> R {
        var found = try lookup()
        for _ in 0..<3 {
            let held = writers(of: plainFiles(found))
            if held.isEmpty { return try body(found) }
            let done: R? = try holdingIO(held[...]) {
                let again = try lookup()
                guard writers(of: plainFiles(again)).map(ObjectIdentifier.init) == held.map(ObjectIdentifier.init) else {
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

    /// The writers of `files`, each once, in the order given.
    private func writers(of files: [PlainFile]) -> [Writer] {
        var seen = Set<ObjectIdentifier>()
        return files.compactMap { writers.get(UInt64($0.id)) }.filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    private func holdingIO<R>(_ held: ArraySlice<Writer>, _ body: () throws -> R) rethrows -> R {
        guard let first = held.first else { return try body() }
        return try first.io { try holdingIO(held.dropFirst(), body) }
    }
}
