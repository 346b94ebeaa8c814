import AlbumCore

extension FileSystem {
    /// Removes a library file that the change just committed no longer needs (the bytes
    /// of a plain file that was replaced, a staging file that was imported). Its failure
    /// must not undo that change, and is not hidden either: it is logged, and bytes that
    /// no row names are removed when the library is next opened (Library.open).
    func discard(_ path: LibraryPath) {
        do {
            _ = try library.files.remove(path)
        } catch {
            Log.warning("\(error); it is removed when the library is next opened")
        }
    }
}
