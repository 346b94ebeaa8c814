/// Single reads of the library on a reader connection, for the command line and the
/// tests: each is `read { $0.X }` (see `LibraryRecords` for what they mean). Code that
/// reads several things that must agree uses one `read` (or a transaction) instead.
extension Library {
    public func asset(id: Int64) throws -> Asset? { try read { try $0.asset(id: id) } }
    public func asset(named name: String) throws -> Asset? { try read { try $0.asset(named: name) } }
    public func versions(of id: Int64) throws -> [Version] { try read { try $0.versions(of: id) } }
    public func album(id: Int64) throws -> Album? { try read { try $0.album(id: id) } }
    public func album(named name: String, in parent: Int64) throws -> Album? { try read { try $0.album(named: name, in: parent) } }
    public func albums(in parent: Int64, after: Int64 = 0, limit: Int = Int.max) throws -> [Album] { try read { try $0.albums(in: parent, after: after, limit: limit) } }
    public func allAlbums() throws -> [Album] { try read { try $0.allAlbums() } }
    public func album(path: [String]) throws -> Album? { try read { try $0.album(path: path) } }
    public func albumPath(id: Int64) throws -> [String] { try read { try $0.albumPath(id: id) } }
    public func memberships(ofAsset assetID: Int64) throws -> [Membership] { try read { try $0.memberships(ofAsset: assetID) } }
    public func assets(withSHA256 sha256: String) throws -> [Asset] { try read { try $0.assets(withSHA256: sha256) } }
    public func aliasedAsset(ino: Int64) throws -> Int64? { try read { try $0.aliasedAsset(ino: ino) } }
    public func aliasKeepsItsNumber(_ ino: Int64) throws -> Bool { try read { try $0.aliasKeepsItsNumber(ino) } }
    public func xattr(ino: Int64, name: String) throws -> [UInt8]? { try read { try $0.xattr(ino: ino, name: name) } }
    public func xattrNames(ino: Int64) throws -> [String] { try read { try $0.xattrNames(ino: ino) } }
    public func assets(in view: AssetView, after: Int64 = -1, limit: Int = Int.max) throws -> [Asset] { try read { try $0.assets(in: view, after: after, limit: limit) } }
    public func asset(named name: String, in view: AssetView) throws -> Asset? { try read { try $0.asset(named: name, in: view) } }
    public func count(in view: AssetView) throws -> Int { try read { try $0.count(in: view) } }
    public func members(ofAlbum album: Int64, after: Int64 = -1, limit: Int = Int.max) throws -> [(Membership, Asset)] { try read { try $0.members(ofAlbum: album, after: after, limit: limit) } }
    public func member(named name: String, ofAlbum album: Int64) throws -> (Membership, Asset)? { try read { try $0.member(named: name, ofAlbum: album) } }
    public func years() throws -> [Int] { try read { try $0.years() } }
    public func months(ofYear year: Int) throws -> [Int] { try read { try $0.months(ofYear: year) } }
    public func days(ofMonth month: Int) throws -> [Int] { try read { try $0.days(ofMonth: month) } }
    public func plainFile(id: Int64) throws -> PlainFile? { try read { try $0.plainFile(id: id) } }
    public func plainFile(named name: String, in dirIno: UInt64) throws -> PlainFile? { try read { try $0.plainFile(named: name, in: dirIno) } }
    public func plainFiles(in dirIno: UInt64, after: Int64 = 0, limit: Int = Int.max) throws -> [PlainFile] { try read { try $0.plainFiles(in: dirIno, after: after, limit: limit) } }
}
