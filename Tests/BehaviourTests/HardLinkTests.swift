import AlbumCore
import Foundation
import Glibc
import TestSupport
import Testing

/// Hard links of plain files (docs/namespace.md, "Hard links"): `ln`, `cp -al` and
/// `rsync -H` make one file with several names, as on any disk; such a file stays plain
/// under every name. (`ln` of a photo is an album membership: OperationTableTests.)
@Suite(.serialized)
struct HardLinkTests {
    @Test(arguments: Kind.allCases)
    func aLinkedFileIsOneFileUnderEachOfItsNames(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/notes.txt", Fixture.text)
        let ino = try f.fs.stat("Albums/Trip/notes.txt").ino
        try f.fs.link("Albums/Trip/notes.txt", "Albums/Other/copy.txt")
        try f.fs.link("Albums/Trip/notes.txt", "Albums/Trip/same.txt")
        for name in ["Albums/Trip/notes.txt", "Albums/Other/copy.txt", "Albums/Trip/same.txt"] {
            let status = try f.fs.stat(name)
            #expect(status.ino == ino, "\(name): one file, one number")
            #expect(status.nlink == 3, "\(name): three names")
        }
        #expect(try f.names("Albums/Trip") == ["P.jpg", "notes.txt", "same.txt"])
        #expect(try f.names("Albums/Other") == ["P.jpg", "copy.txt"])
        // Written through one name, read through the others.
        let h = try f.fs.open("Albums/Other/copy.txt", O_WRONLY | O_APPEND, mode: 0)
        try f.fs.write(h, Array("more\n".utf8), at: Int64(Fixture.text.count))
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/same.txt") == Fixture.text + Array("more\n".utf8))
        try f.fs.setxattr("Albums/Trip/same.txt", "user.note", "shared")
        #expect(try f.fs.getxattr("Albums/Other/copy.txt", "user.note") == "shared")
        // The name it was made with goes first: the others keep the file, its number and
        // its bytes.
        try f.fs.unlink("Albums/Trip/notes.txt")
        #expect(try f.names("Albums/Trip") == ["P.jpg", "same.txt"])
        #expect(try f.fs.stat("Albums/Other/copy.txt").nlink == 2)
        #expect(try f.fs.stat("Albums/Trip/same.txt").ino == ino)
        // Renamed, it is still the same file; renamed onto another of its names, nothing changes.
        try f.fs.rename("Albums/Trip/same.txt", "Albums/Trip/renamed.txt")
        try f.fs.rename("Albums/Trip/renamed.txt", "Albums/Other/copy.txt")
        #expect(try f.names("Albums/Trip") == ["P.jpg", "renamed.txt"])
        #expect(try f.fs.stat("Albums/Trip/renamed.txt").ino == ino)
        try f.fs.unlink("Albums/Other/copy.txt")
        #expect(try f.fs.stat("Albums/Trip/renamed.txt").nlink == 1)
        #expect(try f.fs.get("Albums/Trip/renamed.txt") == Fixture.text + Array("more\n".utf8))
        #expect(try f.fs.getxattr("Albums/Trip/renamed.txt", "user.note") == "shared")
        try f.fs.unlink("Albums/Trip/renamed.txt")
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
        #expect(try f.names("Albums/Other") == ["P.jpg"])
        #expect(try f.library().check().problems == [])
        try f.expectPKept()
    }

    @Test(arguments: Kind.allCases)
    func aFileWithSeveralNamesStaysPlainUnderAPhotosName(_ kind: Kind) throws {
        let f = try Fixture(kind)
        // Photo bytes in a hidden file (a save's temporary file, rsync's), linked to a
        // visible name: one file under both names, no photo.
        try f.fs.put("Albums/Trip/.A.jpg.tmp", Fixture.photoA)
        try f.fs.link("Albums/Trip/.A.jpg.tmp", "Albums/Trip/A.jpg")
        #expect(try f.assetCount() == 1)
        #expect(try f.fs.stat("Albums/Trip/A.jpg").nlink == 2)
        // Renamed to a visible name, or written and closed there: still that file.
        try f.fs.rename("Albums/Trip/.A.jpg.tmp", "Albums/Other/A2.jpg")
        try f.fs.put("Albums/Trip/A.jpg", Fixture.photoB)
        #expect(try f.assetCount() == 1)
        #expect(try f.fs.get("Albums/Other/A2.jpg") == Fixture.photoB)
        #expect(f.fs.errno { _ = try f.fs.getxattr("Albums/Trip/A.jpg", "user.albumfs.sha256") } == ENODATA, "no photo")
        // Over a photo it would be that photo's next version: refused, both unchanged.
        #expect(f.fs.errno { try f.fs.rename("Albums/Other/A2.jpg", "Albums/Other/P.jpg") } == EINVAL)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoP)
        #expect(try f.versions() == 1)
        // Its last other name gone, it is a file like any other: renamed to a visible
        // name, photo bytes are a photo.
        try f.fs.unlink("Albums/Trip/A.jpg")
        try f.fs.rename("Albums/Other/A2.jpg", "Albums/Other/B.jpg")
        #expect(try f.assetCount() == 2)
        #expect(try f.names("All Photos") == ["B.jpg", "P.jpg"])
        #expect(try f.library().check().problems == [])
    }

    @Test(arguments: Kind.allCases)
    func aFileIsLinkedOnlyWhereFilesAreMade(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/notes.txt", Fixture.text)
        #expect(f.fs.errno { try f.fs.link("Albums/Trip/notes.txt", "Albums/Other/P.jpg") } == EEXIST)
        #expect(f.fs.errno { try f.fs.link("Albums/Trip/notes.txt", "Albums/Trip/NOTES.TXT") } == EEXIST, "names compare without case")
        #expect(f.fs.errno { try f.fs.link("Albums/Trip/notes.txt", "\(OperationTableTests.day)/notes.txt") } == EPERM)
        #expect(f.fs.errno { try f.fs.link("Albums/Trip/notes.txt", "Smart Albums/Videos/notes.txt") } == EPERM)
        #expect(try f.fs.stat("Albums/Trip/notes.txt").nlink == 1)
        // A photo's sidecar with a second name stays where it is when the photo goes to
        // Recently Deleted (that name still shows it); one with a single name goes along.
        try f.fs.put("Albums/Trip/P.xmp", Array("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>".utf8))
        try f.fs.link("Albums/Trip/P.xmp", "Albums/Trip/keep.xmp")
        try f.fs.unlink("Albums/Trip/P.jpg")
        try f.fs.unlink("Albums/Other/P.jpg")
        try f.fs.unlink("All Photos/P.jpg")
        #expect(try f.names("Albums/Trip") == ["P.xmp", "keep.xmp", "notes.txt"])
        #expect(try f.library().check().problems == [])
    }
}
