/// The records of a library as one connection sees them: what `Library.read` hands out,
/// and what a `Transaction` reads inside itself (its own changes included). Every query
/// of the storage core is a method of this protocol or of `Transaction`; nothing outside
/// the storage core writes SQL.
public protocol LibraryRecords {
    var db: any Database { get }
    var library: Library { get }
}

/// Reads on a reader connection (see `Library.read`).
public struct Records: LibraryRecords {
    public let db: any Database
    public let library: Library
}

/// One write transaction, owned by the caller of `Library.write`: every change made
/// through it is committed together when the closure returns, or rolled back when it
/// throws. A filesystem operation (a rename, an import, a save) is one transaction.
///
/// Work that waits on the disk or on a decoder (hashing, fsync of a blob, reading
/// metadata) happens before the transaction opens, so that the writer lock is held for
/// SQL only.
public struct Transaction: LibraryRecords {
    public let db: any Database
    public let library: Library
}
