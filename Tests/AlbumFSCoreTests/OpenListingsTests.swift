import AlbumCore
import AlbumFSCore
import Foundation
import TestSupport
import XCTest

/// When the core drops a folder's kept listing once more for a listing read across a
/// change (`OpenListings`), in-process, watching what it tells the kernel. The mount's
/// side, with a page held while a photo lands, is `ListingCacheTests`.
final class OpenListingsTests: XCTestCase {
    var temp: TempDirectory!
    var library: Library!
    var fs: FileSystem!
    var album: UInt64 = 0
    var other: UInt64 = 0
    let sent = Locked<[FileSystem.Invalidation]>([])

    override func setUpWithError() throws {
        temp = TempDirectory()
        library = try Library.create(at: temp.sub("lib"))
        let b = try library.write { try $0.createAlbum(named: "B", in: 0) }
        let c = try library.write { try $0.createAlbum(named: "C", in: 0) }
        for name in ["DSCN0010.jpg", "DSCN0012.jpg"] {
            _ = try library.importFile(at: Samples.directory + "/photos/jpg/gps/" + name, originalName: name,
                                       destination: ImportDestination(album: b.id))
        }
        album = UInt64(b.id)
        other = UInt64(c.id)
        fs = FileSystem(library: library, options: MountOptions())
        fs.setInvalidator { [sent] items in sent.withLock { $0 += items } }
    }

    override func tearDown() {
        fs?.stop()
        fs = nil
        library = nil
        let failure = temp.remove()
        // Background work the core started (thumbnails made ahead) must have ended with
        // `stop()`: one still writing leaves the library half removed.
        XCTAssertFalse(FileManager.default.fileExists(atPath: temp.path), "\(temp.path) was not removed whole: \(failure ?? "")")
    }

    /// Reads `listing` of `folder` to its end, a page of one entry at a time; returns the
    /// names, and what the core told the kernel while it read the last, empty page.
    func readToTheEnd(_ listing: UInt64, of folder: UInt64, after: Int64 = 0) throws -> (names: [String], atTheEnd: [FileSystem.Invalidation]) {
        var names: [String] = []
        var cookie = after
        while true {
            sent.withLock { $0.removeAll() }
            let page = try fs.readdir(folder, after: cookie, limit: 1, listing: listing)
            guard let last = page.last else { return (names, sent.withLock { $0 }) }
            names += page.map(\.name)
            cookie = last.cookie
        }
    }

    func removePhoto() throws {
        try fs.unlink(parent: album, name: Array("DSCN0012.jpg".utf8))
    }

    func testAListingReadAcrossAChangeOfItsFolderDropsItOnceMoreAtItsEnd() throws {
        let listing = fs.openListing(album)
        let first = try fs.readdir(album, after: 0, limit: 3, listing: listing)
        XCTAssertEqual(first.map(\.name), [".", "..", "DSCN0010.jpg"])
        try removePhoto()
        let rest = try readToTheEnd(listing, of: album, after: first.last!.cookie)
        XCTAssertEqual(rest.names, [])
        XCTAssertEqual(rest.atTheEnd, [.listing(album)])

        // Read again from the start (rewinddir), with no change since its end: nothing.
        XCTAssertEqual(try readToTheEnd(listing, of: album).atTheEnd, [])
        sent.withLock { $0.removeAll() }
        fs.closeListing(listing)
        XCTAssertEqual(sent.withLock { $0 }, [])
    }

    func testAListingReadAfterTheChangeOrOfAnotherFolderDropsNothing() throws {
        let ofOther = fs.openListing(other)
        _ = try fs.readdir(other, after: 0, limit: 1, listing: ofOther)
        try removePhoto()
        let after = fs.openListing(album)
        let read = try readToTheEnd(after, of: album)
        XCTAssertEqual(read.names, [".", "..", "DSCN0010.jpg"])
        XCTAssertEqual(read.atTheEnd, [])
        XCTAssertEqual(try readToTheEnd(ofOther, of: other, after: 1).atTheEnd, [])
    }

    func testOneListingsDropIsNoChangeForAnother() throws {
        let before = fs.openListing(album)
        _ = try fs.readdir(album, after: 0, limit: 1, listing: before)
        try removePhoto()
        let after = fs.openListing(album)
        _ = try fs.readdir(album, after: 0, limit: 1, listing: after)
        XCTAssertEqual(try readToTheEnd(before, of: album, after: 1).atTheEnd, [.listing(album)])
        XCTAssertEqual(try readToTheEnd(after, of: album, after: 1).atTheEnd, [], "read after the change, and the drop is none")
    }

    func testAListingClosedBeforeItsEndDropsItsFolderWhenItReadBeforeAChange() throws {
        let listing = fs.openListing(album)
        _ = try fs.readdir(album, after: 0, limit: 1, listing: listing)
        try removePhoto()
        sent.withLock { $0.removeAll() }
        fs.closeListing(listing)
        XCTAssertEqual(sent.withLock { $0 }, [.listing(album)])
        sent.withLock { $0.removeAll() }
        fs.closeListing(listing)
        XCTAssertEqual(sent.withLock { $0 }, [], "closed once")
    }

    /// The core forgets folders' changes that no open listing read before (beyond 1,024
    /// folders); one that an open listing read before is kept.
    func testAChangeAnOpenListingReadBeforeIsKeptAmongThousandsOfOthers() throws {
        let albums = try library.write { tx in try (0..<1_100).map { try tx.createAlbum(named: "A\($0)", in: 0).id } }
        let listing = fs.openListing(album)
        _ = try fs.readdir(album, after: 0, limit: 1, listing: listing)
        try removePhoto()
        for id in albums { _ = try fs.mkdir(parent: UInt64(id), name: Array("sub".utf8)) }
        XCTAssertEqual(try readToTheEnd(listing, of: album, after: 1).atTheEnd, [.listing(album)])
    }
}
