import AlbumCore

/// Test photos: see `SyntheticMedia` in the core.
public typealias MediaFactory = SyntheticMedia
