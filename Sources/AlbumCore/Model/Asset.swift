/// One photo or video, as stored.
public struct Asset: Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var originalName: String
    public var sha256: String
    public var size: Int64
    public var version: Int
    public var mediaType: MediaType
    public var format: String
    public var kinds: MediaKinds
    public var takenAt: Int64
    public var takenOffset: Int?
    public var takenDay: Int
    public var takenSource: CaptureSource
    public var sortKey: Int64
    public var mtimeNs: Int64?
    public var width: Int?
    public var height: Int?
    public var orientation: Int?
    public var rotation: Int?
    public var latitude: Double?
    public var longitude: Double?
    public var make: String?
    public var model: String?
    public var lens: String?
    public var duration: Double?
    public var favorite: Bool
    public var hidden: Bool
    public var addedAt: Int64
    public var changedNs: Int64
    public var trashedAt: Int64?
    /// Number of album memberships.
    public var links: Int
    /// Permission bits a user set; nil for the default.
    public var mode: UInt32?

    public var isTrashed: Bool { trashedAt != nil }

    /// st_mtime: the mtime a user or a save set, else the capture date.
    public var mtimeNanoseconds: Int64 { mtimeNs ?? storedNanoseconds(seconds: takenAt) }

    /// What its bytes said when they were read (the same bytes say the same again).
    public var metadata: MediaMetadata {
        var m = MediaMetadata(format: MediaFormat(rawValue: format) ?? .jpeg)
        m.width = width
        m.height = height
        m.orientation = orientation
        m.rotation = rotation
        if takenSource == .exif || takenSource == .video || takenSource == .xmp {
            m.capture = CaptureDate(instant: takenAt, offsetMinutes: takenOffset, source: takenSource)
        }
        m.latitude = latitude
        m.longitude = longitude
        m.make = make
        m.model = model
        m.lens = lens
        m.duration = duration
        return m
    }

    /// "asset 1042 (IMG_0001.JPG)", for log lines.
    public var label: String { "asset \(id) (\(name))" }

    /// The capture date as ISO 8601 (user.albumfs.capture_date), with its offset when
    /// known. A wall clock the bytes gave without an offset is shown as such. A file's
    /// mtime (or one a user set) is an instant: it is shown with this machine's offset at
    /// that instant, so that it names the same moment in whatever zone the daemon runs.
    public var captureDateISO: String {
        if takenOffset == nil, takenSource == .fileTime || takenSource == .user { return Dates.iso8601(instant: takenAt) }
        return Dates.iso8601(instant: takenAt, offsetMinutes: takenOffset)
    }

    /// The columns `init(row:)` reads, for `SELECT \(Asset.columns) FROM assets a`.
    public static let columns = """
        a.id, a.name, a.original_name, a.sha256, a.size, a.version, a.media_type, a.format, a.kinds,
        a.taken_at, a.taken_offset, a.taken_day, a.taken_source, a.sort_key, a.mtime_ns,
        a.width, a.height, a.orientation, a.rotation, a.latitude, a.longitude, a.make, a.model, a.lens,
        a.duration, a.favorite, a.hidden, a.added_at, a.changed_ns, a.trashed_at, a.links, a.mode
        """

    /// Reads a row selected with `columns`, starting at column `first`.
    public init(row: Row, first: Int32 = 0) {
        let c = first
        id = row.int64(c)
        name = row.text(c + 1)
        originalName = row.text(c + 2)
        sha256 = row.text(c + 3)
        size = row.int64(c + 4)
        version = row.int(c + 5)
        mediaType = MediaType(rawValue: row.int(c + 6)) ?? .photo
        format = row.text(c + 7)
        kinds = MediaKinds(rawValue: row.int(c + 8))
        takenAt = row.int64(c + 9)
        takenOffset = row.optionalInt(c + 10)
        takenDay = row.int(c + 11)
        takenSource = CaptureSource(rawValue: row.int(c + 12)) ?? .fileTime
        sortKey = row.int64(c + 13)
        mtimeNs = row.optionalInt64(c + 14)
        width = row.optionalInt(c + 15)
        height = row.optionalInt(c + 16)
        orientation = row.optionalInt(c + 17)
        rotation = row.optionalInt(c + 18)
        latitude = row.optionalDouble(c + 19)
        longitude = row.optionalDouble(c + 20)
        make = row.optionalText(c + 21)
        model = row.optionalText(c + 22)
        lens = row.optionalText(c + 23)
        duration = row.optionalDouble(c + 24)
        favorite = row.bool(c + 25)
        hidden = row.bool(c + 26)
        addedAt = row.int64(c + 27)
        changedNs = row.int64(c + 28)
        trashedAt = row.optionalInt64(c + 29)
        links = row.int(c + 30)
        mode = row.optionalInt(c + 31).map { UInt32(truncatingIfNeeded: $0) }
    }
}

/// Readdir cookies and listing order: capture time first, then an id, in one integer.
///
/// 34 bits of seconds since 1900 (up to year 2444) and the low 28 bits of the id: a
/// folder listed in this order is oldest capture first, and a listing resumed after a
/// key continues exactly where it stopped, however the folder changed meanwhile.
public enum SortKey {
    static let idBits: Int64 = 28
    static let idMask: Int64 = (1 << idBits) - 1
    static let epochOffset: Int64 = 2_208_988_800  // 1900-01-01 to 1970-01-01
    static let maxTime: Int64 = (1 << 34) - 1

    public static func make(takenAt: Int64, id: Int64) -> Int64 {
        timePart(takenAt) | (id & idMask)
    }

    /// The capture-time half of a key, already shifted into place.
    static func timePart(_ takenAt: Int64) -> Int64 {
        min(max(takenAt + epochOffset, 0), maxTime) << idBits
    }

    /// SQL computing the same key for updates of many rows, from `timePart` (bound) and
    /// each row's id.
    static func sql(timePart: String, id: String) -> String {
        "(\(timePart) | (\(id) & \(idMask)))"
    }
}
