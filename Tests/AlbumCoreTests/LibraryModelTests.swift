import AlbumCore
import Foundation
import TestSupport
import XCTest

/// Dedupe, memberships, trash and restore, names, versions, albums: the model rules of
/// PRODUCT.md section 3, on a real library with real samples.
final class LibraryModelTests: NewLibraryTestCase {
    func sample(_ path: String) -> String { Samples.directory + "/" + path }

    @discardableResult
    func importSample(_ path: String, album: Int64? = nil, name: String? = nil) throws -> ImportOutcome {
        try library.importFile(at: sample(path), originalName: name ?? (path as NSString).lastPathComponent,
                               destination: ImportDestination(album: album))
    }

    func testImportingTheSamplesTwiceAddsNothing() throws {
        for s in Samples.media { try importSample(s.path) }
        let first = try library.stats()
        let blobs = try library.blobs.allFiles().map(\.name).count
        for s in Samples.media {
            guard case .duplicate = try importSample(s.path) else { return XCTFail("\(s.path) imported twice") }
        }
        let second = try library.stats()
        XCTAssertEqual(first.assets, second.assets)
        XCTAssertEqual(first.versions, second.versions)
        XCTAssertEqual(blobs, try library.blobs.allFiles().map(\.name).count)
        XCTAssertEqual(first.assets, Samples.media.count)
    }

    func testSameFileInTwoAlbumsIsOneAssetWithTwoMemberships() throws {
        let a = try library.write { try $0.createAlbum(named: "A", in: 0) }
        let b = try library.write { try $0.createAlbum(named: "B", in: 0) }
        let first = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0010.jpg", album: a.id).asset)
        let outcome = try importSample("photos/jpg/gps/DSCN0010.jpg", album: b.id)
        guard case .duplicate(let second, _, let restored) = outcome else { return XCTFail("not a duplicate") }
        XCTAssertFalse(restored)
        XCTAssertEqual(first.id, second.id)
        XCTAssertEqual(second.links, 2)
        XCTAssertEqual(Set(try library.memberships(ofAsset: first.id).map(\.albumID)), [a.id, b.id])
        XCTAssertEqual(try library.stats().assets, 1)

        // Copying it again into the first album changes nothing.
        try importSample("photos/jpg/gps/DSCN0010.jpg", album: a.id)
        XCTAssertEqual(try library.memberships(ofAsset: first.id).count, 2)

        // Deleting from one album leaves the asset, in the other album and in All Photos.
        try library.write { try $0.removeMembership(album: a.id, name: "DSCN0010.jpg") }
        XCTAssertEqual(try library.asset(id: first.id)?.links, 1)
        XCTAssertEqual(try library.assets(in: .allPhotos).map(\.id), [first.id])
        XCTAssertEqual(try library.members(ofAlbum: b.id).map(\.1.id), [first.id])
        XCTAssertTrue(try library.members(ofAlbum: a.id).isEmpty)
    }

    func testTrashAndRestoreKeepMemberships() throws {
        let album = try library.write { try $0.createAlbum(named: "Trip", in: 0) }
        let asset = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0012.jpg", album: album.id).asset)
        try library.write { try $0.trash(asset.id) }
        XCTAssertTrue(try library.assets(in: .allPhotos).isEmpty)
        XCTAssertTrue(try library.members(ofAlbum: album.id).isEmpty, "a trashed asset shows only in Recently Deleted")
        XCTAssertEqual(try library.assets(in: .smart(.recentlyDeleted)).map(\.id), [asset.id])
        try library.write { try $0.restore(asset.id) }
        XCTAssertEqual(try library.members(ofAlbum: album.id).map(\.1.id), [asset.id])
        XCTAssertTrue(try library.assets(in: .smart(.recentlyDeleted)).isEmpty)

        // Importing the same bytes again restores a trashed asset, with its albums.
        try library.write { try $0.trash(asset.id) }
        guard case .duplicate(_, _, let restored) = try importSample("photos/jpg/gps/DSCN0012.jpg") else {
            return XCTFail("not a duplicate")
        }
        XCTAssertTrue(restored)
        XCTAssertEqual(try library.members(ofAlbum: album.id).map(\.1.id), [asset.id])
    }

    func testDeletePermanentlyAndGCFreesTheBlob() throws {
        let asset = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0021.jpg").asset)
        XCTAssertTrue(library.blobs.exists(asset.sha256))
        try library.write { try $0.trash(asset.id) }
        let trashed = try XCTUnwrap(try library.asset(id: asset.id)?.trashedAt)
        XCTAssertEqual(try library.gc().removedBlobs, 0, "gc keeps what is in Recently Deleted for 30 days")
        let day: Int64 = 86400
        XCTAssertEqual(try library.gc(now: trashed + 29 * day).purgedAssets, 0, "kept on its 29th day")
        XCTAssertEqual(try library.gc(now: trashed + 30 * day - 1).purgedAssets, 0, "kept until its 30 days are over")
        XCTAssertTrue(library.blobs.exists(asset.sha256))
        XCTAssertEqual(try library.asset(id: asset.id)?.isTrashed, true)
        XCTAssertEqual(try library.gc(now: trashed + 30 * day + 1).purgedAssets, 1, "purged once its 30 days are over")
        XCTAssertFalse(library.blobs.exists(asset.sha256))
        XCTAssertNil(try library.asset(id: asset.id))
        XCTAssertTrue(try library.check().isHealthy)
    }

    /// A photo restored after gc read its list (by another host, where several share the
    /// library) is not purged: each deletion asks again (a review found it deleted for
    /// good, its blob with it, after the restore had returned).
    func testGCPurgesNothingRestoredMeanwhile() throws {
        let kept = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0021.jpg").asset)
        let purged = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0012.jpg").asset)
        try library.write { try $0.trash(kept.id); try $0.trash(purged.id) }
        let report = try library.gc(now: nowSeconds() + 31 * 86400, afterListing: {
            try self.library.write { try $0.restore(kept.id) }
        })
        XCTAssertEqual(report.purgedAssets, 1)
        XCTAssertNil(try library.asset(id: purged.id))
        XCTAssertEqual(try library.asset(id: kept.id)?.isTrashed, false)
        XCTAssertTrue(library.blobs.exists(kept.sha256))
        XCTAssertFalse(library.blobs.exists(purged.sha256))
        XCTAssertTrue(try library.check().isHealthy)
    }

    func testNamesAreUniqueIgnoringCaseAndNormalization() throws {
        let nfc = "Caf\u{E9}.jpg", nfd = "Cafe\u{301}.jpg"
        let one = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0010.jpg", name: nfc).asset)
        let two = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0012.jpg", name: nfd.uppercased()).asset)
        let three = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0021.jpg", name: "caf\u{E9}.JPG").asset)
        XCTAssertEqual(one.name, nfc)
        XCTAssertEqual(two.name, "CAFE\u{301} (2).JPG")
        XCTAssertEqual(three.name, "caf\u{E9} (3).JPG")
        // Lookups find them in any case and normalization.
        XCTAssertEqual(try library.asset(named: nfd)?.id, one.id)
        XCTAssertEqual(try library.asset(named: "CAF\u{C9} (2).jpg")?.id, two.id)
        // The suffix never changes afterwards, even when the first name is freed.
        try library.write { try $0.deleteAsset(one.id) }
        XCTAssertEqual(try library.asset(id: two.id)?.name, "CAFE\u{301} (2).JPG")

        let album = try library.write { try $0.createAlbum(named: "Été", in: 0) }
        XCTAssertThrowsError(try library.write { try $0.createAlbum(named: "E\u{301}T\u{C9}", in: 0) }) { error in
            XCTAssertEqual((error as? LibraryError)?.errno, EEXIST)
        }
        XCTAssertEqual(try library.album(named: "e\u{301}té", in: 0)?.id, album.id)
    }

    func testAlbumsNestRenameMoveAndDelete() throws {
        let trips = try library.write { try $0.createAlbum(named: "Trips", in: 0) }
        let rome = try library.write { try $0.createAlbum(named: "Rome 2024", in: trips.id) }
        XCTAssertEqual(try library.album(path: ["Trips", "Rome 2024"])?.id, rome.id)
        XCTAssertEqual(try library.albumPath(id: rome.id), ["Trips", "Rome 2024"])
        try importSample("photos/jpg/gps/DSCN0010.jpg", album: rome.id)

        XCTAssertThrowsError(try library.write { try $0.deleteAlbum(id: trips.id) }) { XCTAssertEqual(($0 as? LibraryError)?.errno, ENOTEMPTY) }
        XCTAssertThrowsError(try library.write { try $0.moveAlbum(id: trips.id, to: rome.id, name: "Loop") }) {
            XCTAssertEqual(($0 as? LibraryError)?.errno, EINVAL)
        }
        try library.write { try $0.moveAlbum(id: rome.id, to: 0, name: "Roma") }
        XCTAssertEqual(try library.album(path: ["Roma"])?.id, rome.id)
        XCTAssertEqual(try library.members(ofAlbum: rome.id).count, 1)
        try library.write { try $0.deleteAlbum(id: trips.id) }
        XCTAssertNil(try library.album(id: trips.id))

        // "Save to album X, creating it if missing."
        let created = try XCTUnwrap(try library.write { try $0.ensureAlbum(path: ["Family", "2024"]) })
        XCTAssertEqual(try library.write { try $0.ensureAlbum(path: ["family", "2024"])?.id }, created.id)
    }

    func testObjectIDsAreNeverReused() throws {
        let a = try library.write { try $0.createAlbum(named: "A", in: 0) }
        try library.write { try $0.deleteAlbum(id: a.id) }
        let b = try library.write { try $0.createAlbum(named: "A", in: 0) }
        XCTAssertGreaterThan(b.id, a.id)
        let reserved = try library.reserveIDs(10)
        let c = try library.write { try $0.createAlbum(named: "C", in: 0) }
        XCTAssertGreaterThanOrEqual(c.id, reserved.upperBound)
        // Album entries too (schema 9): an entry's shared thumbnails take their inode
        // numbers from its number, and the last one removed came back for the next.
        let photo = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0010.jpg").asset)
        let first = try library.write { try $0.addMembership(album: c.id, asset: photo.id, name: "P.jpg") }
        try library.write { try $0.removeMembership(album: c.id, name: "P.jpg") }
        let second = try library.write { try $0.addMembership(album: b.id, asset: photo.id, name: "Q.jpg") }
        XCTAssertGreaterThan(second.id, first.id)
        XCTAssertEqual(try library.asset(id: photo.id)?.links, 1)
    }

    func testNewVersionKeepsTheOldOne() throws {
        let album = try library.write { try $0.createAlbum(named: "A", in: 0) }
        let asset = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0010.jpg", album: album.id).asset)
        // A new version is new bytes placed as a blob, and the rows in one transaction.
        let staged = try Staging(files: library.files).copy(from: sample("photos/jpg/gps/DSCN0025.jpg"))
        let metadata = try InProcessMetadata().metadata(of: staged.descriptor, format: .jpeg)
        _ = try library.blobs.place(staged.path, descriptor: staged.descriptor, sha256: staged.sha256)
        let edited = try library.write { tx in
            try tx.addVersion(of: asset.id, sha256: staged.sha256, size: staged.size, metadata: metadata, mtimeNs: 1_000_000_000)
        }
        XCTAssertEqual(edited.id, asset.id)
        XCTAssertEqual(edited.version, 2)
        XCTAssertEqual(edited.takenAt, metadata.capture?.instant, "the capture date is read again from the new bytes")
        XCTAssertEqual(edited.mtimeNanoseconds, 1_000_000_000, "st_mtime is the write's")
        XCTAssertEqual(try library.versions(of: asset.id).map(\.sha256), [asset.sha256, edited.sha256])
        XCTAssertTrue(library.blobs.exists(asset.sha256))
        XCTAssertEqual(try library.members(ofAlbum: album.id).first?.1.sha256, edited.sha256)
        XCTAssertEqual(try library.gc().removedBlobs, 0, "old versions are kept")
    }

    func testMtimeSetByUserBecomesCaptureDateOnlyWithoutEXIF() throws {
        let exif = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0010.jpg").asset)
        let plain = try XCTUnwrap(try importSample("photos/tiff/Arbitro.tiff").asset)
        XCTAssertEqual(plain.takenSource, .fileTime)
        let when: Int64 = 1_500_000_000 * 1_000_000_000 + 123
        try library.write { try $0.setMtime(exif.id, nanoseconds: when) }
        try library.write { try $0.setMtime(plain.id, nanoseconds: when) }
        let e = try XCTUnwrap(try library.asset(id: exif.id)), p = try XCTUnwrap(try library.asset(id: plain.id))
        XCTAssertEqual(e.takenAt, exif.takenAt)
        XCTAssertEqual(e.mtimeNanoseconds, when)
        XCTAssertEqual(p.takenAt, 1_500_000_000)
        XCTAssertEqual(p.mtimeNanoseconds, when)
        XCTAssertEqual(p.takenSource, .user)
    }

    func testRefusedFilesLeaveNothingBehind() throws {
        for s in Samples.notMedia {
            guard case .refused = try importSample(s.path) else { return XCTFail("\(s.path) not refused") }
        }
        XCTAssertEqual(try library.stats().assets, 0)
        XCTAssertTrue(try library.blobs.allFiles().map(\.name).isEmpty)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: library.files.absolute(.staging)), [])
    }

    func testLibraryFilesArePrivate() throws {
        func mode(_ path: String) -> mode_t {
            var st = stat()
            stat(path, &st)
            return st.st_mode & 0o777
        }
        let asset = try XCTUnwrap(try importSample("photos/jpg/gps/DSCN0010.jpg").asset)
        XCTAssertEqual(mode(library.root), 0o700)
        XCTAssertEqual(mode(library.files.absolute(.database)), 0o600)
        XCTAssertEqual(mode(library.files.absolute(.originals)), 0o700)
        XCTAssertEqual(mode(library.files.absolute(.blob(asset.sha256))), 0o400)
    }

    func testSecondExclusiveOpenIsRefused() throws {
        XCTAssertThrowsError(try Library.open(at: library.root, access: .exclusive)) { error in
            XCTAssertEqual(error as? LibraryError, .locked(library.root))
        }
        XCTAssertNoThrow(try Library.open(at: library.root, access: .reader))
    }
}
