import AlbumCore
import Foundation
import TestSupport
import XCTest

/// Every smart album and date view is a query of the core; each is checked against what
/// it must and must not list.
final class ViewQueryTests: NewLibraryTestCase {
    func importFile(_ path: String, name: String? = nil) throws -> Asset {
        try XCTUnwrap(try library.importFile(at: path, originalName: name ?? (path as NSString).lastPathComponent,
                                             destination: .library).asset)
    }

    func sample(_ path: String) throws -> Asset { try importFile(Samples.directory + "/" + path) }

    func names(_ view: AssetView) throws -> [String] { try library.assets(in: view).map(\.name) }

    /// A Live Photo whose video is deleted for good is a photo again: out of Live Photos
    /// (a review found it there for good); one whose other photo goes keeps its pair.
    func testALivePhotoWithoutItsVideoLeavesLivePhotos() throws {
        var photos: [Asset] = []
        for (name, tag) in [("beach.jpg", "a"), ("BEACH.JPG", "b")] {
            let path = temp.sub(tag + "-" + name)
            try MediaFactory.image(at: path, width: 64, height: tag == "a" ? 48 : 40, exif: [
                "exif-ifd2-DateTimeOriginal": "2019:07:24 18:02:11", "exif-ifd2-OffsetTimeOriginal": "+00:00",
            ])
            photos.append(try importFile(path, name: name))
        }
        let video = try importFile(Samples.directory + "/videos/beach-2019-07-24.mov", name: "beach.mov")
        XCTAssertEqual(Set(try names(.smart(.livePhotos))), Set(photos.map(\.name)))
        try library.write { _ = try $0.deleteAsset(photos[1].id) }
        XCTAssertEqual(try names(.smart(.livePhotos)), [photos[0].name], "the video still has its photo")
        XCTAssertEqual(try library.asset(id: video.id)?.kinds.contains(.live), true)
        try library.write { _ = try $0.deleteAsset(video.id) }
        XCTAssertEqual(try names(.smart(.livePhotos)), [])
        XCTAssertEqual(try library.asset(id: photos[0].id)?.kinds.contains(.live), false)
    }

    func testSmartAlbums() throws {
        let screenshot = try sample("extras/Screenshot 2024-05-01 at 10.00.00.png")
        let gif = try sample("extras/animated.gif")
        let panorama = try sample("extras/panorama.jpg")
        let video = try sample("videos/clip-2021-03-05.mp4")
        let plain = try sample("photos/jpg/gps/DSCN0010.jpg")
        let favorite = try sample("photos/jpg/gps/DSCN0012.jpg")
        let hidden = try sample("photos/jpg/gps/DSCN0021.jpg")
        let trashed = try sample("photos/jpg/gps/DSCN0025.jpg")
        try library.write { try $0.setFavorite(favorite.id, true) }
        try library.write { try $0.setHidden(hidden.id, true) }
        try library.write { try $0.trash(trashed.id) }

        let selfiePath = temp.sub("IMG_0100.JPG")
        try MediaFactory.image(at: selfiePath, width: 300, height: 400, exif: [
            "exif-ifd0-Make": "Apple", "exif-ifd0-Model": "iPhone 12",
            "exif-ifd2-DateTimeOriginal": "2024:06:15 10:11:12",
            "exif-ifd2-LensModel": "iPhone 12 front camera 2.87mm f/2.2",
        ])
        let selfie = try importFile(selfiePath)

        // A Live Photo: a photo and a video with the same name stem, taken at the same time.
        let livePath = temp.sub("beach.jpg")
        try MediaFactory.image(at: livePath, width: 64, height: 48, exif: [
            "exif-ifd2-DateTimeOriginal": "2019:07:24 18:02:11", "exif-ifd2-OffsetTimeOriginal": "+00:00",
        ])
        let livePhoto = try importFile(livePath)
        let liveVideo = try importFile(Samples.directory + "/videos/beach-2019-07-24.mov", name: "beach.mov")

        // A camera RAW (Canon CR2: a TIFF header with "CR" at byte 8).
        let rawPath = temp.sub("IMG_0001.CR2")
        var raw: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 0x10, 0, 0, 0, 0x43, 0x52, 0x02, 0x00, 0, 0, 0, 0]
        raw += [UInt8](repeating: 0, count: 512)
        try Data(raw).write(to: URL(fileURLWithPath: rawPath))
        let rawAsset = try importFile(rawPath)

        XCTAssertEqual(try names(.smart(.screenshots)), [screenshot.name])
        XCTAssertEqual(try names(.smart(.animated)), [gif.name])
        XCTAssertEqual(try names(.smart(.panoramas)), [panorama.name])
        XCTAssertEqual(Set(try names(.smart(.videos))), [video.name, liveVideo.name])
        XCTAssertEqual(try names(.smart(.favorites)), [favorite.name])
        XCTAssertEqual(try names(.smart(.hidden)), [hidden.name])
        XCTAssertEqual(try names(.smart(.recentlyDeleted)), [trashed.name])
        XCTAssertEqual(try names(.smart(.selfies)), [selfie.name])
        XCTAssertEqual(try names(.smart(.livePhotos)), [livePhoto.name], "the photo half of a Live Photo")
        XCTAssertEqual(try names(.smart(.raw)), [rawAsset.name])
        let visible = [screenshot, gif, panorama, video, plain, favorite, selfie, livePhoto, liveVideo, rawAsset]
        XCTAssertEqual(Set(try names(.smart(.recentlyAdded))), Set(visible.map(\.name)))
        XCTAssertEqual(Set(try names(.allPhotos)), Set(visible.map(\.name)))

        // Each view's query agrees with its membership test.
        let everything = visible + [hidden, try XCTUnwrap(try library.asset(id: trashed.id))]
        for smart in SmartAlbum.allCases {
            let listed = Set(try library.assets(in: .smart(smart)).map(\.id))
            let expected = Set(everything.compactMap { a in try? library.asset(id: a.id) }.filter { AssetView.smart(smart).contains($0) }.map(\.id))
            XCTAssertEqual(listed, expected, smart.folderName)
            XCTAssertEqual(try library.count(in: .smart(smart)), listed.count, smart.folderName)
        }
    }

    func testAllPhotosIsOldestFirstAndPagesResumeAfterASortKey() throws {
        for s in Samples.media { _ = try sample(s.path) }
        let all = try library.assets(in: .allPhotos)
        XCTAssertEqual(all.map(\.takenAt), all.map(\.takenAt).sorted())
        var paged: [Int64] = []
        var cursor: Int64 = -1
        while true {
            let page = try library.assets(in: .allPhotos, after: cursor, limit: 7)
            guard let last = page.last else { break }
            paged += page.map(\.id)
            cursor = last.sortKey
        }
        XCTAssertEqual(paged, all.map(\.id))
    }

    /// Listings read fewer columns than `Asset`; what they read must be what the whole
    /// row says, in every view and album, with a mode and an mtime set by a user.
    func testListingsShowWhatTheWholeRowsSay() throws {
        for s in Samples.media.prefix(40) { _ = try sample(s.path) }
        let all = try library.assets(in: .allPhotos)
        let album = try library.write { try $0.createAlbum(named: "Trip", in: 0) }
        try library.write { tx in
            try tx.setMode(all[0].id, 0o600)
            try tx.setMtime(all[1].id, nanoseconds: 1_234_567_890_123_456_789)
            try tx.setFavorite(all[2].id, true)
            for asset in all.prefix(10) { _ = try tx.addMembership(album: album.id, asset: asset.id, name: "in trip " + asset.name) }
        }
        for view in [AssetView.allPhotos] + SmartAlbum.allCases.map(AssetView.smart) {
            let whole = try library.assets(in: view)
            XCTAssertEqual(try library.read { try $0.listedAssets(in: view) }, whole.map(\.listed), "\(view)")
            XCTAssertEqual(try library.read { try $0.listedAssets(in: view, after: whole.first?.sortKey ?? -1, limit: 3) },
                           Array(whole.dropFirst().prefix(3)).map(\.listed), "\(view), a page")
        }
        let members = try library.members(ofAlbum: album.id)
        XCTAssertEqual(members.count, 10)
        let listed = try library.read { try $0.listedMembers(ofAlbum: album.id) }
        XCTAssertEqual(listed.map(\.0), members.map(\.0))
        XCTAssertEqual(listed.map(\.1), members.map(\.1.listed))
        XCTAssertEqual(listed.first { $0.1.id == all[0].id }?.1.mode, 0o600)
        XCTAssertEqual(listed.first { $0.1.id == all[1].id }?.1.mtimeNanoseconds, 1_234_567_890_123_456_789)
    }

    func testDateViews() throws {
        for s in Samples.media { _ = try sample(s.path) }
        let all = try library.assets(in: .allPhotos)
        let years = try library.years()
        XCTAssertEqual(years, Array(Set(all.map { $0.takenDay / 10000 })).sorted())
        XCTAssertTrue(years.contains(2008))
        let months2008 = try library.months(ofYear: 2008)
        XCTAssertEqual(months2008, Array(Set(all.filter { $0.takenDay / 10000 == 2008 }.map { $0.takenDay / 100 })).sorted())
        XCTAssertTrue(months2008.contains(200810))
        let days = try library.days(ofMonth: 200810)
        XCTAssertTrue(days.contains(20081022))
        let gpsDay = try names(.day(20081022))
        // The nine Nikon COOLPIX P6000 photos of 22 October 2008, and truncated.jpg (a cut copy of one).
        XCTAssertEqual(gpsDay.count, 10)
        XCTAssertEqual(Set(gpsDay), Set(all.filter { $0.takenDay == 20081022 }.map(\.name)))
        XCTAssertTrue(try library.read { try $0.hasAssets(dayPrefix: 2008, divisor: 10000) })
        XCTAssertFalse(try library.read { try $0.hasAssets(dayPrefix: 1901, divisor: 10000) })

        // The day is the capture's own: 2021-04-11 15:47:53 at -05:00 is on the 11th, not the 12th UTC.
        let heic = try XCTUnwrap(try library.asset(named: "IMG_5195.HEIC"))
        XCTAssertEqual(heic.takenDay, 20210411)
        XCTAssertEqual(heic.captureDateISO, "2021-04-11T15:47:53-05:00")
    }
}
