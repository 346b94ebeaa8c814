import AlbumCore

/// A cached thumbnail JPEG on disk.
struct ThumbnailFile: Sendable {
    let path: String
    let size: Int64
    let mtimeNs: Int64
}

extension FileSystem {
    /// The thumbnail of an asset at the mount's size, if it exists or can be made.
    func thumbnailFile(asset: Int64) throws -> ThumbnailFile? {
        nil  // made by the thumbnails issue
    }

    /// Entries of a `.thumbnails/` folder: `NAME.jpg` for each asset of its folder that
    /// has a thumbnail, in the folder's order.
    func thumbnailEntries(in folderIno: UInt64, after: Int64, limit: Int) throws -> [DirectoryEntry] {
        []
    }
}
