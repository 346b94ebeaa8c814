import AlbumCore
import Foundation
import Glibc
import TestSupport
import Testing

/// Symbolic links in folders of `Albums/` (docs/namespace.md, "Symbolic links"): kept as
/// a plain directory keeps them, and never a photo, whatever their name.
@Suite(.serialized)
struct SymlinkTests {
    @Test(arguments: Kind.allCases)
    func aLinkKeepsItsTargetAndIsListed(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.symlink("P.jpg", "Albums/Trip/to-p")
        try f.fs.symlink("../../Other/P.jpg", "Albums/Trip/far.jpg")
        #expect(try f.fs.readlink("Albums/Trip/to-p") == "P.jpg")
        #expect(try f.fs.readlink("Albums/Trip/far.jpg") == "../../Other/P.jpg")
        #expect(try f.names("Albums/Trip") == ["P.jpg", "far.jpg", "to-p"])
        let link = try f.fs.stat("Albums/Trip/to-p")
        #expect(link.size == 5, "a link's size is its target's length")
        #expect(link.mode == 0o777)
        #expect(f.fs.errno { _ = try f.fs.readlink("Albums/Trip/P.jpg") } == EINVAL, "a photo is no link")
        // Named like a photo, it is still a link: no asset, nothing in All Photos.
        #expect(try f.assetCount() == 1)
        #expect(try f.names("All Photos") == ["P.jpg"])
        try f.expectPKept()
    }

    @Test(arguments: Kind.allCases)
    func aLinkRenamedToAPhotoNameStaysALinkAndCannotReplaceAPhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.symlink("P.jpg", "Albums/Trip/link")
        try f.fs.rename("Albums/Trip/link", "Albums/Trip/L.jpg")
        #expect(try f.fs.readlink("Albums/Trip/L.jpg") == "P.jpg")
        try f.fs.rename("Albums/Trip/L.jpg", "Albums/Other/L.jpg")
        #expect(try f.names("Albums/Other") == ["L.jpg", "P.jpg"])
        #expect(try f.assetCount() == 1)
        #expect(f.fs.errno { try f.fs.rename("Albums/Other/L.jpg", "Albums/Other/P.jpg") } == EINVAL,
                "a link is not a photo's next version")
        #expect(try f.fs.readlink("Albums/Other/L.jpg") == "P.jpg")
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoP)
        try f.fs.unlink("Albums/Other/L.jpg")
        #expect(try f.names("Albums/Other") == ["P.jpg"])
        try f.expectPKept()
        #expect(try f.versions() == 1)
    }

    @Test(arguments: Kind.allCases)
    func aLinkNamedAsASidecarIsNotRead(_ kind: Kind) throws {
        let f = try Fixture(kind)
        // A target that is itself XMP saying "rating 5": a link is never read for it...
        let xmp = "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>"
            + "<rdf:Description xmlns:xmp='http://ns.adobe.com/xap/1.0/' xmp:Rating='5'/></rdf:RDF></x:xmpmeta>"
        try f.fs.symlink(xmp, "Albums/Trip/P.xmp")
        #expect(try f.fs.readlink("Albums/Trip/P.xmp") == xmp)
        #expect(f.fs.errno { _ = try f.fs.getxattr("Albums/Trip/P.jpg", "user.albumfs.rating") } == ENODATA)
        // (Renamed into place, as an editor's temporary file would be.)
        try f.fs.rename("Albums/Trip/P.xmp", "Albums/Trip/.P.xmp.tmp")
        try f.fs.rename("Albums/Trip/.P.xmp.tmp", "Albums/Trip/P.xmp")
        #expect(f.fs.errno { _ = try f.fs.getxattr("Albums/Trip/P.jpg", "user.albumfs.rating") } == ENODATA)
        // ...where a file of those bytes is.
        try f.fs.unlink("Albums/Trip/P.xmp")
        try f.fs.put("Albums/Trip/P.xmp", Array(xmp.utf8))
        #expect(try f.fs.getxattr("Albums/Trip/P.jpg", "user.albumfs.rating") == "5")
    }

    @Test(arguments: Kind.allCases)
    func linksAreMadeOnlyWhereFilesAre(_ kind: Kind) throws {
        let f = try Fixture(kind)
        #expect(f.fs.errno { try f.fs.symlink("x", "\(OperationTableTests.day)/x") } == EPERM)
        #expect(f.fs.errno { try f.fs.symlink("x", "Albums/Trip/P.jpg") } == EEXIST)
        #expect(f.fs.errno { _ = try f.fs.readlink("Albums/Trip/missing") } == ENOENT)
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
    }
}
