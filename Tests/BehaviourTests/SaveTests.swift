import AlbumCore
import Foundation
import Glibc
import TestSupport
import Testing

/// PRODUCT.md section 3's import rules and save sequences, as the calls the tools make
/// (their real runs are in MountTests/EditingToolTests), on the filesystem core
/// in-process and on a real mount.
@Suite(.serialized)
struct SaveTests {
    // MARK: plain files

    @Test(arguments: Kind.allCases)
    func aTextFileInAnAlbumIsAPlainFileOfIt(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/notes.txt", Fixture.text)
        #expect(try f.names("Albums/Trip") == ["P.jpg", "notes.txt"])
        #expect(try f.fs.get("Albums/Trip/notes.txt") == Fixture.text)
        #expect(try f.names("All Photos") == ["P.jpg"], "never shown in other views")
        try f.fs.rename("Albums/Trip/notes.txt", "Albums/Other/notes.md")
        #expect(try f.fs.get("Albums/Other/notes.md") == Fixture.text)
        try f.fs.put("Albums/Other/notes.md", Fixture.text + Fixture.text)
        #expect(try f.fs.stat("Albums/Other/notes.md").size == Int64(Fixture.text.count * 2))
        try f.fs.unlink("Albums/Other/notes.md")
        #expect(try f.names("Albums/Other") == ["P.jpg"])
        #expect(try f.assetCount() == 1)
    }

    /// A file whose first bytes are no photo is not hashed as it is written (its close
    /// keeps it plain on those bytes without reading the rest); photo bytes written over
    /// them from the start, or after a truncation to nothing, are that photo, under the
    /// hash `sha256sum` gives its bytes. So are a photo's written in a first piece too
    /// short to tell, and a photo emptied, closed, and written again without `O_TRUNC`
    /// (a close that finds no photo bytes no longer takes the hash being streamed).
    @Test(arguments: Kind.allCases)
    func photoBytesWrittenOverTextFromTheStartAreThatPhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let text = [UInt8](repeating: UInt8(ascii: "x"), count: 4096)
        let a = try f.fs.open("Albums/Trip/A.jpg", O_CREAT | O_WRONLY, mode: 0o644)
        try f.fs.write(a, text, at: 0)
        try f.fs.write(a, Fixture.photoA, at: 0)
        try f.fs.close(a)
        let b = try f.fs.open("Albums/Trip/B.jpg", O_CREAT | O_WRONLY, mode: 0o644)
        try f.fs.write(b, text, at: 0)
        try f.fs.truncate(b, to: 0)
        try f.fs.write(b, Array(Fixture.photoB[..<65536]), at: 0)
        try f.fs.write(b, Array(Fixture.photoB[65536...]), at: 65536)
        try f.fs.close(b)
        let c = try f.fs.open("Albums/Trip/C.txt", O_CREAT | O_WRONLY, mode: 0o644)
        try f.fs.write(c, text, at: 0)
        try f.fs.write(c, text, at: 4096)
        try f.fs.close(c)
        let d = try f.fs.open("Albums/Trip/D.jpg", O_CREAT | O_WRONLY, mode: 0o644)
        try f.fs.write(d, Array(Fixture.photoC[..<10]), at: 0)
        try f.fs.write(d, Array(Fixture.photoC[10...]), at: 10)
        try f.fs.close(d)
        // P emptied (ImageMagick truncates and closes), then written again from the start.
        let emptied = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.close(emptied)
        let p = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY, mode: 0)
        try f.fs.write(p, Array(Fixture.photoA[..<65536]), at: 0)
        try f.fs.write(p, Array(Fixture.photoA[65536...]), at: 65536)
        try f.fs.close(p)
        #expect(try f.names("All Photos") == ["A.jpg", "B.jpg", "D.jpg", "P.jpg"])
        #expect(try f.fs.stat("Albums/Trip/P.jpg").ino == f.p)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        #expect(try f.fs.get("Albums/Trip/D.jpg") == Fixture.photoC)
        for (name, sample) in [("A.jpg", "DSCN0012.jpg"), ("B.jpg", "DSCN0021.jpg"), ("D.jpg", "DSCN0025.jpg"), ("P.jpg", "DSCN0012.jpg")] {
            let sum = try Processes.run("/usr/bin/sha256sum", [Fixture.gps + "/" + sample])
            #expect(try f.fs.getxattr("Albums/Trip/" + name, "user.albumfs.sha256") == String(sum.stdout.prefix(64)), "\(name)")
        }
        #expect(try f.fs.get("Albums/Trip/A.jpg") == Fixture.photoA)
        #expect(try f.fs.get("Albums/Trip/B.jpg") == Fixture.photoB)
        #expect(try f.fs.get("Albums/Trip/C.txt") == text + text)
        #expect(try f.assetCount() == 4)
    }

    /// rsync's temporary file renamed into place is imported with the digest its writes
    /// streamed, when nothing changed its bytes since its close (`ClosedDigests`): its
    /// times and mode set, as rsync does. Changed in any way after the close (written
    /// again in place, cut by a truncate, changed in the library's `plain/` behind the
    /// daemon's back), it is the bytes it holds at its rename, under the hash
    /// `sha256sum` gives them.
    @Test(arguments: Kind.allCases)
    func aFileRenamedIntoPlaceIsTheBytesItHoldsAtItsRename(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let a = Fixture.photoA
        var altered = a
        altered[a.count / 2] ^= 0xFF  // in the middle of the image data: still a photo
        let junk = [UInt8](repeating: 7, count: 100)
        func written(_ name: String, _ bytes: [UInt8]) throws {
            let h = try f.fs.open("Albums/Trip/" + name, O_CREAT | O_WRONLY | O_EXCL, mode: 0o600)
            try f.fs.write(h, Array(bytes[..<65536]), at: 0)
            try f.fs.write(h, Array(bytes[65536...]), at: 65536)
            try f.fs.close(h)
        }
        // Kept: its times and mode set after its close, as rsync sets them.
        try written(".K.jpg.a1b2c3", a)
        let reader = try f.fs.open("Albums/Trip/.K.jpg.a1b2c3", O_RDONLY, mode: 0)
        try f.fs.setMtime(reader, nanoseconds: 1_500_000_000_000_000_000)
        try f.fs.close(reader)
        try f.fs.chmod("Albums/Trip/.K.jpg.a1b2c3", 0o644)
        // Written again in place through a new open, one byte in the middle.
        try written(".W.jpg.a1b2c3", a)
        let again = try f.fs.open("Albums/Trip/.W.jpg.a1b2c3", O_WRONLY, mode: 0)
        try f.fs.write(again, [altered[a.count / 2]], at: Int64(a.count / 2))
        try f.fs.close(again)
        // Cut by a truncate by path.
        try written(".T.jpg.a1b2c3", a + junk)
        try f.fs.truncate("Albums/Trip/.T.jpg.a1b2c3", to: Int64(a.count))
        // Changed behind the daemon's back, in the library's own copy of its bytes.
        try written(".B.jpg.a1b2c3", a)
        let id = try f.fs.stat("Albums/Trip/.B.jpg.a1b2c3").ino
        let behind = Glibc.open(f.lib + "/plain/\(id)", O_WRONLY)
        #expect(behind >= 0, "the library keeps a plain file's bytes in plain/<inode number>")
        #expect(pwrite(behind, [altered[a.count / 2]], 1, off_t(a.count / 2)) == 1)
        Glibc.close(behind)

        for name in ["K", "W", "T", "B"] { try f.fs.rename("Albums/Trip/.\(name).jpg.a1b2c3", "Albums/Trip/\(name).jpg") }
        let expected = ["K": a, "W": altered, "T": a, "B": altered]
        for (name, bytes) in expected {
            let path = "Albums/Trip/\(name).jpg"
            #expect(try f.fs.get(path) == bytes, "\(name)")
            let sum = SHA256Digest.hex(of: Data(bytes))
            #expect(try f.fs.getxattr(path, "user.albumfs.sha256") == sum, "\(name)")
        }
        #expect(try f.fs.stat("Albums/Trip/K.jpg").mtimeNs == 1_500_000_000_000_000_000)
        #expect(try f.names("All Photos") == ["B.jpg", "K.jpg", "P.jpg", "T.jpg", "W.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func emptyFilesAndJunkArePlainFilesAndNeverAnError(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/empty.jpg", [])
        try f.fs.put("Albums/Trip/.DS_Store", [1, 2, 3])
        try f.fs.put("Albums/Trip/Thumbs.db", [4])
        try f.fs.put("All Photos/desktop.ini", [5])
        try f.fs.put(OperationTableTests.day + "/._P.jpg", [6])
        #expect(try f.names("Albums/Trip") == [".DS_Store", "P.jpg", "Thumbs.db", "empty.jpg"])
        #expect(try f.fs.stat("Albums/Trip/empty.jpg").size == 0)
        #expect(try f.names("All Photos") == ["P.jpg", "desktop.ini"])
        #expect(try f.assetCount() == 1)
        // Every level of By Date keeps a client's junk and lists it, after its date
        // folders (the levels above a day listed only date folders).
        for folder in ["By Date", "By Date/2008", "By Date/2008/2008-10"] {
            try f.fs.put(folder + "/.DS_Store", [7])
            #expect(try f.fs.list(folder).last == ".DS_Store", "\(folder)")
            #expect(try f.fs.get(folder + "/.DS_Store") == [7])
        }
        #expect(try f.names("By Date") == [".DS_Store", "2008"])
        #expect(try f.names(OperationTableTests.day) == ["._P.jpg", "P.jpg"])
        // A hidden name keeps photo bytes a plain file too.
        try f.fs.put("Albums/Trip/.P.jpg.bak", Fixture.photoA)
        #expect(try f.assetCount() == 1)
    }

    /// ImageMagick (convert P.jpg small.jpg): create, close empty, open again with
    /// O_CREAT, write, close.
    @Test(arguments: Kind.allCases)
    func createCloseEmptyReopenWriteMakesOnePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/small.jpg", O_RDWR | O_CREAT | O_TRUNC, mode: 0o644)
        try f.fs.close(h)
        let again = try f.fs.open("Albums/Trip/small.jpg", O_RDWR | O_CREAT | O_TRUNC, mode: 0o644)
        try f.fs.write(again, Fixture.photoA, at: 0)
        try f.fs.close(again)
        #expect(try f.names("All Photos") == ["P.jpg", "small.jpg"])
        #expect(try f.assetCount() == 2)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP)
    }

    /// rsync: a hidden temporary file, its mtime set, then renamed to its name.
    @Test(arguments: Kind.allCases)
    func aHiddenTemporaryFileRenamedToAVisibleNameIsAPhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/.A.jpg.XyZ123", O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        try f.fs.write(h, Fixture.photoA, at: 0)
        try f.fs.close(h)
        let mtime: Int64 = 1_600_000_000 * 1_000_000_000 + 42
        let t = try f.fs.open("Albums/Trip/.A.jpg.XyZ123", O_RDONLY, mode: 0)
        try f.fs.close(t)
        try f.fs.rename("Albums/Trip/.A.jpg.XyZ123", "Albums/Trip/A.jpg")
        #expect(try f.names("All Photos") == ["A.jpg", "P.jpg"])
        #expect(try f.fs.get("Albums/Trip/A.jpg") == Fixture.photoA)
        _ = mtime
    }

    @Test(arguments: Kind.allCases)
    func textRenamedToAPhotoNameStaysPlain(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/.notes.tmp", Fixture.text)
        try f.fs.rename("Albums/Trip/.notes.tmp", "Albums/Trip/notes.jpg")
        #expect(try f.fs.get("Albums/Trip/notes.jpg") == Fixture.text, "the rename succeeds and the bytes are intact")
        #expect(try f.names("All Photos") == ["P.jpg"])
    }

    // MARK: bytes the library holds

    @Test(arguments: Kind.allCases)
    func bytesTheLibraryHoldsAreAddedWhereTheyAreNot(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/New")
        try f.fs.put("Albums/New/again.jpg", Fixture.photoP)
        #expect(try f.fs.stat("Albums/New/again.jpg").ino == f.p, "the same photo, now also in New")
        #expect(try f.assetCount() == 1)
        // Trashed, then copied in again: restored, with its albums.
        try f.fs.unlink("All Photos/P.jpg")
        try f.fs.mkdir("Albums/Back")
        try f.fs.put("Albums/Back/P.jpg", Fixture.photoP)
        #expect(try f.names("Smart Albums/Recently Deleted") == [])
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
        #expect(try f.assetCount() == 1)
    }

    /// A hidden photo is never shown by a copy of its bytes: the copy stays where it was
    /// made (as on a disk), a photo of its own sharing the blob, and the hidden one stays
    /// hidden (before, the copy vanished from the album it was made in, and in All Photos
    /// it showed the hidden photo again).
    @Test(arguments: Kind.allCases)
    func bytesOfAHiddenPhotoCopiedInStayVisibleAndItStaysHidden(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Smart Albums/Hidden/H.jpg", Fixture.photoA)
        let h = try f.fs.stat("Smart Albums/Hidden/H.jpg").ino
        try f.fs.mkdir("Albums/New")
        try f.fs.put("Albums/New/A.jpg", Fixture.photoA)
        #expect(try f.names("Albums/New") == ["A.jpg"])
        #expect(try f.fs.get("Albums/New/A.jpg") == Fixture.photoA)
        #expect(try f.fs.stat("Albums/New/A.jpg").ino != h)
        try f.fs.put("All Photos/A2.jpg", Fixture.photoA)
        #expect(try f.names("All Photos") == ["A.jpg", "A2.jpg", "P.jpg"])
        #expect(try f.names("Smart Albums/Hidden") == ["H.jpg"])
        #expect(try f.fs.getxattr("Smart Albums/Hidden/H.jpg", "user.albumfs.hidden") == "1")
        #expect(try f.assetCount() == 4)
    }

    /// A save whose bytes are a hidden photo's: still the photo's next version, and the
    /// temporary file vanishes, leaving the hidden photo as it was.
    @Test(arguments: Kind.allCases)
    func aTemporaryFileWithAHiddenPhotosBytesRenamedOverThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Smart Albums/Hidden/HA.jpg", Fixture.photoA)
        try f.fs.put("Smart Albums/Hidden/HB.jpg", Fixture.photoB)
        for (folder, bytes) in [("Albums/Trip", Fixture.photoA), ("All Photos", Fixture.photoB)] {
            let h = try f.fs.open(folder + "/tmpq81v", O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            try f.fs.write(h, bytes, at: 0)
            try f.fs.close(h)
            try f.fs.rename(folder + "/tmpq81v", folder + "/P.jpg")
            try f.expectPKept()
            #expect(try f.fs.get("Albums/Other/P.jpg") == bytes, "\(folder)")
            #expect(try f.names("Smart Albums/Hidden") == ["HA.jpg", "HB.jpg"], "\(folder)")
            #expect(try f.assetCount() == 3, "\(folder): the temporary file vanished")
        }
        #expect(try f.versions() == 3)
    }

    /// A save whose bytes are a photo's in Recently Deleted: the temporary file's close
    /// brings that photo back (bytes the library holds, copied in), and the rename over
    /// the photo it saves puts it back where it was, in Recently Deleted, as of when it
    /// was first deleted.
    @Test(arguments: Kind.allCases)
    func aTemporaryFileWithATrashedPhotosBytesRenamedOverThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let deletedAt = try f.trashTAAndTB(withSidecar: true)
        #expect(try f.names("All Photos") == ["P.jpg"], "the sidecar went with its photo")
        for (folder, bytes) in [("Albums/Trip", Fixture.photoA), ("All Photos", Fixture.photoB)] {
            let h = try f.fs.open(folder + "/tmp5c0e", O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            try f.fs.write(h, bytes, at: 0)
            try f.fs.close(h)
            // Listed (a file manager watching the folder): the kernel must keep no name
            // of the photo brought back, or P.jpg would lead to it after the rename.
            #expect(try f.names(folder).contains("tmp5c0e"), "\(folder)")
            try f.fs.rename(folder + "/tmp5c0e", folder + "/P.jpg")
            try f.expectPKept()
            #expect(try f.fs.get("Albums/Other/P.jpg") == bytes, "\(folder)")
            #expect(try f.names("Smart Albums/Recently Deleted") == ["TA.jpg", "TB.jpg"], "\(folder)")
            #expect(try f.names("Albums/Old") == [], "\(folder)")
            #expect(try f.names("Albums/Trip") == ["P.jpg"], "\(folder)")
        }
        #expect(try f.deletionTimes() == deletedAt)
        #expect(try f.versions() == 3)
        #expect(try f.assetCount() == 3)
        // Restored for good, TB comes back with its sidecar.
        try f.fs.rename("Smart Albums/Recently Deleted/TB.jpg", "All Photos/TB.jpg")
        #expect(try f.names("All Photos") == ["P.jpg", "TB.jpg", "TB.xmp"])
    }

    /// A save's temporary file that brought a photo back, written again with other bytes
    /// before its rename: the photo it brought back now holds them, so it is not put back
    /// (it is no longer as it was); it leaves the album as `mv` would take it.
    @Test(arguments: Kind.allCases)
    func aTemporaryFileThatBroughtAPhotoBackAndChangedItStays(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("All Photos/TA.jpg", Fixture.photoA)
        try f.fs.unlink("All Photos/TA.jpg")
        try f.fs.put("Albums/Trip/tmp5c0e", Fixture.photoA)
        try f.fs.put("Albums/Trip/tmp5c0e", Fixture.photoC)
        try f.fs.rename("Albums/Trip/tmp5c0e", "Albums/Trip/P.jpg")
        try f.expectPKeptExceptAllPhotos(also: "TA.jpg")
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoC)
        #expect(try f.fs.get("All Photos/TA.jpg") == Fixture.photoC)
        #expect(try f.names("Smart Albums/Recently Deleted") == [])
    }

    /// exiftool `-overwrite_original_in_place` with bytes of photos in Recently Deleted:
    /// the temporary file's close brings each back, its bytes are written into the photo,
    /// and its removal puts it back in Recently Deleted as it was.
    @Test(arguments: Kind.allCases)
    func aTemporaryFileWithATrashedPhotosBytesCopiedIntoThePhotoAndRemoved(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let deletedAt = try f.trashTAAndTB(withSidecar: false)
        for (folder, bytes) in [("Albums/Trip", Fixture.photoA), ("All Photos", Fixture.photoB)] {
            try f.fs.put("\(folder)/P.jpg_exiftool_tmp", bytes)
            let h = try f.fs.open("\(folder)/P.jpg", O_RDWR | O_TRUNC, mode: 0)
            try f.fs.write(h, bytes, at: 0)
            try f.fs.close(h)
            try f.fs.unlink("\(folder)/P.jpg_exiftool_tmp")
            #expect(try f.names("All Photos") == ["P.jpg"], "\(folder)")
            #expect(try f.names("Smart Albums/Recently Deleted") == ["TA.jpg", "TB.jpg"], "\(folder)")
            #expect(try f.names("Albums/Old") == [], "\(folder)")
        }
        try f.expectPKept()
        #expect(try f.deletionTimes() == deletedAt)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoB)
        #expect(try f.versions() == 3)
        #expect(try f.assetCount() == 3)
    }

    @Test(arguments: Kind.allCases)
    func aCopyBesideThePhotoIsADuplicateThatEditsAlone(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/P-copy.jpg", Fixture.photoP)
        let copy = try f.fs.stat("Albums/Trip/P-copy.jpg")
        #expect(copy.ino != f.p)
        #expect(try f.assetCount() == 2)
        try f.fs.put("Albums/Trip/P-copy.jpg", Fixture.photoP.tagged("edited copy"))
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP, "editing the copy never changes the original")
        #expect(try f.fs.get("Albums/Trip/P-copy.jpg") == Fixture.photoP.tagged("edited copy"))
        try f.expectPKeptExceptAllPhotos(also: "P-copy.jpg")
    }

    // MARK: write into the photo

    @Test(arguments: Kind.allCases)
    func writingIntoThePhotoKeepsIt(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/P.jpg", Fixture.photoA)
        try f.expectPKept()
        #expect(try f.versions() == 2)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
    }

    /// A viewer reads a photo while an editor writes it in place: the viewer sees the
    /// bytes written so far, and its close saves nothing (on a disk, closing a reader
    /// changes nothing); the editor's close makes the one version.
    @Test(arguments: Kind.allCases)
    func aReadersCloseDuringASaveSavesNothing(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let editor = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.write(editor, Array("not yet a photo".utf8), at: 0)
        let viewer = try f.fs.open("Albums/Other/P.jpg", O_RDONLY, mode: 0)
        #expect(try f.fs.read(viewer, count: 15, at: 0) == Array("not yet a photo".utf8))
        try f.fs.close(viewer)
        #expect(try f.versions() == 1)
        #expect(Array(try f.fs.get("Albums/Trip/P.jpg").prefix(15)) == Array("not yet a photo".utf8), "still being written")
        try f.fs.truncate(editor, to: 0)
        try f.fs.write(editor, Fixture.photoA, at: 0)
        try f.fs.close(editor)
        #expect(try f.versions() == 2)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
        // A plain file being written: a reader's close leaves it being written.
        let notes = try f.fs.open("Albums/Trip/notes.txt", O_RDWR | O_CREAT | O_EXCL, mode: 0o644)
        try f.fs.write(notes, Fixture.text, at: 0)
        let reader = try f.fs.open("Albums/Trip/notes.txt", O_RDONLY, mode: 0)
        #expect(try f.fs.read(reader, count: 100, at: 0) == Fixture.text)
        #expect(f.fs.errno { try f.fs.write(reader, Fixture.text, at: 0) } == EBADF)
        try f.fs.close(reader)
        try f.fs.write(notes, Fixture.text, at: Int64(Fixture.text.count))
        try f.fs.close(notes)
        #expect(try f.fs.get("Albums/Trip/notes.txt") == Fixture.text + Fixture.text)
        try f.expectPKept()
    }

    /// A file kept open while another open fills it with bytes of a photo the library
    /// has (it becomes that photo here): what its handle writes next is that photo's next
    /// version, seen by readers of the photo while written, as on a disk.
    @Test(arguments: Kind.allCases)
    func aHandleOfAFileThatBecameALibraryPhotoWritesThatPhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/New")
        let h = try f.handleOfAFileThatBecomesP("Albums/New/a.jpg")
        try f.fs.truncate(h, to: 0)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 0)
        try f.fs.write(h, Fixture.photoA, at: 0)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == Int64(Fixture.photoA.count), "a stat by path sees the write")
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA, "readers see the bytes being written")
        try f.fs.close(h)
        #expect(try f.versions() == 2)
        #expect(try f.fs.get("Albums/New/a.jpg") == Fixture.photoA)
        try f.expectPKept()
    }

    /// One program writes into the photo while another saves it by rename (a temporary
    /// file renamed over it): the rename wins the name, as on a disk, where the writer
    /// would be left writing a file no name leads to. Its bytes are never saved; its
    /// handle still writes; its close is no error, and what it wrote is never shown: not
    /// to an open made while it is open, nor after its close. (On a mount its handle
    /// shares the photo's kernel inode, whose size is the new version's: what it reads
    /// back is not checked.)
    @Test(arguments: Kind.allCases)
    func aSaveByRenameSupersedesBytesBeingWrittenIntoThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let writer = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.truncate(writer, to: 5)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 5, "a reader sees the bytes being written")
        try f.fs.put("Albums/Trip/.P.jpg.tmp", Fixture.photoA)
        try f.fs.rename("Albums/Trip/.P.jpg.tmp", "Albums/Trip/P.jpg")
        #expect(try f.fs.stat("Albums/Other/P.jpg").size == Int64(Fixture.photoA.count))
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        try f.fs.write(writer, Array("xyz".utf8), at: 0)
        // On a mount the kernel keeps those bytes in the pages of the handle's kernel
        // inode; a new open, while the handle is open, must not read them.
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA, "the saved version, while the superseded handle is open")
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == Int64(Fixture.photoA.count))
        try f.fs.close(writer)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        #expect(try f.versions() == 2)
        try f.expectPKept()
    }

    @Test(arguments: Kind.allCases)
    func notAPhotoWrittenIntoThePhotoIsRefusedAtTheClose(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.write(h, Fixture.text, at: 0)
        #expect(f.fs.errno { try f.fs.close(h) } == EINVAL)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP, "the photo is unchanged")
        #expect(try f.versions() == 1)
        try f.expectPKept()
    }

    /// ImageMagick in place (`convert P.jpg P.jpg`): truncate and close empty, then open
    /// again, write and close. The empty close is neither an error nor a version.
    @Test(arguments: Kind.allCases)
    func emptiedThenWrittenIsOneVersion(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR | O_CREAT | O_TRUNC, mode: 0o644)
        try f.fs.close(h)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 0, "a reader sees what was truncated")
        #expect(try f.versions() == 1)
        let again = try f.fs.open("Albums/Trip/P.jpg", O_RDWR | O_CREAT | O_TRUNC, mode: 0o644)
        try f.fs.write(again, Fixture.photoA, at: 0)
        try f.fs.close(again)
        #expect(try f.versions() == 2)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
        try f.expectPKept()
    }

    /// ftruncate of a photo to a shorter length keeps its first bytes (the copy the next
    /// version is written into holds just those); writing the rest back is no new version.
    @Test(arguments: Kind.allCases)
    func aPhotoCutShortKeepsItsFirstBytes(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let cut = Int64(Fixture.photoP.count / 2)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.truncate(h, to: cut)
        #expect(try f.fs.read(h, count: Fixture.photoP.count, at: 0) == Array(Fixture.photoP[..<Int(cut)]))
        try f.fs.write(h, Array(Fixture.photoP[Int(cut)...]), at: cut)
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP)
        let versions = try f.library().versions(of: Int64(f.p))
        #expect(versions.count == 1, "\(versions), the photo has \(Fixture.photoP.count) bytes")
        try f.expectPKept()
    }

    /// A child process started while a photo is being written (an editor's helper, or
    /// any program this process runs) gets a copy of the descriptor and closes it at its
    /// exec: the kernel asks for a flush, which saves nothing, as on a disk. The bytes
    /// become one version at the editor's own close. (Tests that spawn programs ran
    /// beside aPhotoCutShortKeepsItsFirstBytes and made its half photo a version.)
    @Test(arguments: Kind.allCases)
    func aChildProcessClosingItsCopyOfTheDescriptorSavesNothing(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let half = Fixture.photoA.count / 2
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR | O_TRUNC, mode: 0)
        try f.fs.write(h, Array(Fixture.photoA[..<half]), at: 0)
        try f.fs.runChildProcess()
        #expect(try f.library().versions(of: Int64(f.p)).count == 1, "the child's close saved half a photo")
        try f.fs.write(h, Array(Fixture.photoA[half...]), at: Int64(half))
        try f.fs.close(h)
        let versions = try f.library().versions(of: Int64(f.p))
        #expect(versions.map(\.size) == [Int64(Fixture.photoP.count), Int64(Fixture.photoA.count)])
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
    }

    /// A photo emptied (truncated and closed), then its bytes copied into another album
    /// within the minute: the copy shows them, as the file it was made from (it is the
    /// same photo, which shows its bytes again), not an empty file. Another photo renamed
    /// over it meanwhile is its next version, shown at once.
    @Test(arguments: Kind.allCases)
    func aCopyOfAnEmptiedPhotosBytesShowsThem(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.close(h)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 0)
        try f.fs.mkdir("Albums/New")
        try f.fs.put("Albums/New/copy.jpg", Fixture.photoP)
        #expect(try f.fs.stat("Albums/New/copy.jpg").size == Int64(Fixture.photoP.count))
        #expect(try f.fs.get("Albums/New/copy.jpg") == Fixture.photoP)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP, "the same photo, shown whole again")
        #expect(try f.fs.stat("Albums/New/copy.jpg").ino == f.p)
        #expect(try f.versions() == 1)
        // Emptied again, then another photo renamed over it: that is its next version.
        let emptied = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.close(emptied)
        try f.fs.put("Albums/New/B.jpg", Fixture.photoB)
        try f.fs.rename("Albums/New/B.jpg", "Albums/Trip/P.jpg")
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == Int64(Fixture.photoB.count))
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoB)
        #expect(try f.versions() == 2)
        // A save in between (a handle open on the emptied photo) goes on: its write is
        // the next version.
        let again = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.close(again)
        let writing = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.mkdir("Albums/Third")
        try f.fs.put("Albums/Third/P.jpg", Fixture.photoB)
        try f.fs.write(writing, Fixture.photoA, at: 0)
        try f.fs.close(writing)
        #expect(try f.versions() == 3)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        #expect(try f.fs.stat("Albums/Third/P.jpg").ino == f.p, "the copy was P's bytes then: it is P")
        try f.expectPKept()
    }

    /// An emptied photo moves as the empty file it shows (the plain-directory oracle
    /// found each of these showing the whole photo): renamed, it stays empty; renamed
    /// over another photo, it is no photo (EINVAL, both unchanged); renamed to a hidden
    /// name, that name is an empty plain file, and the photo, out of the album, stays
    /// emptied where it still is (its other names, as a truncated file's other links)
    /// until photo bytes come or its minute ends.
    @Test(arguments: Kind.allCases)
    func anEmptiedPhotoMovesAsTheEmptyFileItShows(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/B.jpg", Fixture.photoB)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.close(h)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/Q.jpg")
        #expect(try f.fs.stat("Albums/Trip/Q.jpg").size == 0)
        #expect(try f.fs.get("Albums/Trip/Q.jpg") == [])
        #expect(f.fs.errno { try f.fs.rename("Albums/Trip/Q.jpg", "Albums/Trip/B.jpg") } == EINVAL)
        #expect(try f.fs.get("Albums/Trip/B.jpg") == Fixture.photoB)
        #expect(try f.fs.stat("Albums/Trip/Q.jpg").size == 0)
        try f.fs.rename("Albums/Trip/Q.jpg", "Albums/Trip/.Q.jpg.bak")
        let hidden = try f.fs.stat("Albums/Trip/.Q.jpg.bak")
        #expect(hidden.size == 0, "\(hidden)")
        #expect(try f.fs.get("Albums/Trip/.Q.jpg.bak") == [])
        #expect(try f.names("Albums/Trip") == [".Q.jpg.bak", "B.jpg"])
        #expect(try f.fs.stat("Albums/Other/P.jpg").size == 0)
        // Its bytes written back where it still is (ImageMagick's second step): the
        // photo shows them, as the same version, and the hidden file stays empty.
        try f.fs.put("Albums/Other/P.jpg", Fixture.photoP)
        #expect(try f.fs.get("All Photos/P.jpg") == Fixture.photoP)
        #expect(try f.fs.get("Albums/Trip/.Q.jpg.bak") == [])
        #expect(try f.versions() == 1)
    }

    /// A photo linked under a name that stays plain (`rsync -H`, `cp -al`) is a file of
    /// its own there with the bytes the photo shows at the link: emptied, an empty file
    /// (the plain-directory oracle's seed 9219 found the whole version there); being
    /// written, a copy of what was written so far. The photo is unchanged by the link.
    @Test(arguments: Kind.allCases)
    func aPhotoLinkedUnderAPlainNameHoldsTheBytesItShows(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let emptied = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.close(emptied)
        try f.fs.link("Albums/Trip/P.jpg", "Albums/Trip/.P.jpg.bak")
        #expect(try f.fs.stat("Albums/Trip/.P.jpg.bak").size == 0)
        #expect(try f.fs.get("Albums/Trip/.P.jpg.bak") == [])
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 0)
        try f.fs.put("Albums/Trip/A.jpg", Fixture.photoA)
        let h = try f.fs.open("Albums/Trip/A.jpg", O_RDWR, mode: 0)
        try f.fs.truncate(h, to: 0)
        try f.fs.write(h, Fixture.text, at: 0)
        try f.fs.link("Albums/Trip/A.jpg", "Albums/Trip/.A.jpg.swp")
        try f.fs.write(h, Array("more".utf8), at: Int64(Fixture.text.count))
        #expect(try f.fs.get("Albums/Trip/.A.jpg.swp") == Fixture.text)
        try f.fs.truncate(h, to: 0)
        try f.fs.write(h, Fixture.photoB, at: 0)
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/A.jpg") == Fixture.photoB)
        #expect(try f.fs.get("Albums/Trip/.A.jpg.swp") == Fixture.text)
        #expect(try f.names("Albums/Trip") == [".A.jpg.swp", ".P.jpg.bak", "A.jpg", "P.jpg"])
        // P's bytes written back (ImageMagick's second step): P shows them, the link's
        // file stays empty.
        try f.fs.put("Albums/Trip/P.jpg", Fixture.photoP)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP)
        #expect(try f.fs.get("Albums/Trip/.P.jpg.bak") == [])
    }

    /// A photo renamed while a handle is still writing into it moves with those bytes,
    /// as a file does on a disk (the plain-directory oracle found the old version there):
    /// to a name that stays plain (an editor's swap file), that file holds what was
    /// written and what the handle writes after, and the photo keeps its version where
    /// it still is; cut to nothing, over another photo, it is no photo (EINVAL).
    @Test(arguments: Kind.allCases)
    func aPhotoRenamedWhileBeingWrittenTakesTheBytesBeingWritten(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.truncate(h, to: 0)
        try f.fs.write(h, Fixture.text, at: 0)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/.P.jpg.swp")
        let more = Array("more notes\n".utf8)
        try f.fs.write(h, more, at: Int64(Fixture.text.count))
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/.P.jpg.swp") == Fixture.text + more)
        #expect(try f.fs.stat("Albums/Trip/.P.jpg.swp").size == Int64(Fixture.text.count + more.count))
        #expect(try f.names("Albums/Trip") == [".P.jpg.swp"])
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoP)
        #expect(try f.versions() == 1)

        try f.fs.put("Albums/Other/B.jpg", Fixture.photoB)
        let g = try f.fs.open("Albums/Other/P.jpg", O_RDWR, mode: 0)
        try f.fs.truncate(g, to: 0)
        #expect(f.fs.errno { try f.fs.rename("Albums/Other/P.jpg", "Albums/Other/B.jpg") } == EINVAL)
        #expect(try f.fs.get("Albums/Other/B.jpg") == Fixture.photoB)
        try f.fs.write(g, Fixture.photoP, at: 0)
        try f.fs.close(g)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoP)
        #expect(try f.versions() == 1)
    }

    /// A photo renamed to a name that stays plain while a handle has it open for writing
    /// with nothing written yet: the handle goes with the name, as on a disk, so that
    /// what it writes and cuts is that file's and never the photo's (the plain-directory
    /// oracle, seed 568, found an `ftruncate` through it cutting the photo instead).
    @Test(arguments: Kind.allCases)
    func aPhotoRenamedToAPlainNameWhileOpenForWritingTakesItsHandlesAlong(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        let before = try f.fs.stat("Albums/Trip/P.jpg")
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/.P.jpg.bak")
        #expect(try f.fs.get("Albums/Trip/.P.jpg.bak") == Fixture.photoP)
        #expect(try f.fs.stat("Albums/Trip/.P.jpg.bak").mtimeNs == before.mtimeNs, "a rename keeps the mtime")
        try f.fs.truncate(h, to: 5)
        #expect(try f.fs.get("Albums/Trip/.P.jpg.bak") == Array(Fixture.photoP[..<5]))
        #expect(try f.fs.stat("Albums/Trip/.P.jpg.bak").size == 5)
        #expect(try f.fs.fstat(h).size == 5, "what the handle has open")
        #expect(try f.fs.stat("All Photos/P.jpg").size == Int64(Fixture.photoP.count))
        try f.fs.write(h, Array("xyz".utf8), at: 5)
        #expect(try f.fs.read(h, count: 10, at: 0) == Array(Fixture.photoP[..<5]) + Array("xyz".utf8))
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/.P.jpg.bak") == Array(Fixture.photoP[..<5]) + Array("xyz".utf8))
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoP, "the photo keeps its version where it still is")
        #expect(try f.versions() == 1)
    }

    /// The same in All Photos, where the photo leaves for Recently Deleted: what the
    /// handle cuts, writes and dates is still the renamed file, never the photo (a
    /// review found `ftruncate` refused there, the photo being deleted, and `futimens`
    /// dating the photo).
    @Test(arguments: Kind.allCases)
    func aPhotoRenamedToAPlainNameInAllPhotosWhileOpenForWritingKeepsItsHandles(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let photoMtime = try f.fs.stat("All Photos/P.jpg").mtimeNs
        let h = try f.fs.open("All Photos/P.jpg", O_RDWR, mode: 0)
        try f.fs.rename("All Photos/P.jpg", "All Photos/.P.jpg.bak")
        #expect(try f.names("Smart Albums/Recently Deleted") == ["P.jpg"])
        try f.fs.truncate(h, to: 5)
        try f.fs.setMtime(h, nanoseconds: 1_000_000_000_000_000_000)
        try f.fs.write(h, Array("xyz".utf8), at: 5)
        try f.fs.close(h)
        #expect(try f.fs.get("All Photos/.P.jpg.bak") == Array(Fixture.photoP[..<5]) + Array("xyz".utf8))
        #expect(try f.fs.get("Smart Albums/Recently Deleted/P.jpg") == Fixture.photoP)
        #expect(try f.fs.stat("Smart Albums/Recently Deleted/P.jpg").mtimeNs == photoMtime)
        #expect(try f.versions() == 1)
    }

    /// A save through a backup name (`mv P.jpg P.jpg~`, then the next version written as
    /// `P.jpg`, or a temporary file renamed to it) while a handle is open for writing on
    /// the photo: the handle goes with the backup, as on a disk, where it writes into the
    /// file now named `P.jpg~`. Before, what it wrote after the save went nowhere, its
    /// close returning 0, and bytes it had written before the save were dropped.
    @Test(arguments: Kind.allCases)
    func aSaveThroughABackupNameHandsTheWritingHandlesToTheBackup(_ kind: Kind) throws {
        let f = try Fixture(kind)
        // Open with nothing written yet.
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/P.jpg~")
        try f.fs.put("Albums/Trip/P.jpg", Fixture.photoA)
        try f.fs.write(h, Array("xyz".utf8), at: 0)
        #expect(try f.fs.read(h, count: 1 << 20, at: 0) == Array("xyz".utf8) + Fixture.photoP[3...])
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/P.jpg~") == Array("xyz".utf8) + Fixture.photoP[3...])
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
        #expect(try f.versions() == 2)
        try f.expectPKept()

        // With bytes written before the save, which is a temporary file renamed to the
        // name, and an mtime set through the handle (`cp -p`): the backup's.
        let g = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.write(g, Array("abc".utf8), at: 0)
        let mtime: Int64 = 1_234_567_890_000_000_000
        try f.fs.setMtime(g, nanoseconds: mtime)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/P.jpg.orig")
        try f.fs.put("Albums/Trip/.P.jpg.tmp", Fixture.photoB)
        try f.fs.rename("Albums/Trip/.P.jpg.tmp", "Albums/Trip/P.jpg")
        #expect(try f.fs.stat("Albums/Trip/P.jpg.orig").mtimeNs == mtime)
        try f.fs.write(g, Array("def".utf8), at: 3)
        try f.fs.close(g)
        #expect(try f.fs.get("Albums/Trip/P.jpg.orig") == Array("abcdef".utf8) + Fixture.photoA[6...])
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoB)
        #expect(try f.names("Albums/Trip") == ["P.jpg", "P.jpg.orig", "P.jpg~"])
        #expect(try f.versions() == 3, "neither handle's bytes are a version")
        try f.expectPKept()
    }

    /// truncate(1) by path of a photo a viewer holds open: `stat` shows the new size (the
    /// plain-directory oracle found the old one, the size of the version the viewer's
    /// kernel inode reads in passthrough), and the viewer reads the version it opened.
    @Test(arguments: Kind.allCases)
    func truncateByPathWhileAViewerReadsShowsTheNewSize(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let viewer = try f.fs.open("Albums/Trip/P.jpg", O_RDONLY, mode: 0)
        #expect(try f.fs.read(viewer, count: 4, at: 0) == Array(Fixture.photoP[..<4]))
        try f.fs.truncate("Albums/Trip/P.jpg", to: 0)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 0)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == [])
        #expect(try f.fs.read(viewer, count: Fixture.photoP.count + 10, at: 0) == Fixture.photoP)
        try f.fs.close(viewer)
        // Its bytes back (ImageMagick's second step): the same version, nothing new.
        try f.fs.put("Albums/Trip/P.jpg", Fixture.photoP)
        #expect(try f.fs.stat("Albums/Other/P.jpg").size == Int64(Fixture.photoP.count))
        #expect(try f.versions() == 1)
    }

    /// Bytes that are no photo closed into an emptied photo are refused, and the photo
    /// shows its version again: its size and its bytes agree.
    @Test(arguments: Kind.allCases)
    func aRefusedSaveOfAnEmptiedPhotoShowsItsVersion(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.close(h)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 0)
        let text = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY, mode: 0)
        try f.fs.write(text, Array("abc".utf8), at: 0)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 3)
        #expect(f.fs.errno { try f.fs.close(text) } == EINVAL)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == Int64(Fixture.photoP.count))
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP)
        #expect(try f.versions() == 1)
    }

    @Test
    func anEmptiedPhotoLeftAloneShowsItsVersionAgainAfterTheMinute() throws {
        let f = try Fixture(.inProcess)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.close(h)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == 0)
        #expect(f.fs.advanceTime(seconds: 61))
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP, "nothing was lost")
        #expect(try f.versions() == 1)
    }

    // MARK: a temporary file renamed over the photo

    /// Python: `tempfile.mkstemp(dir=...)` (a visible name), write, close,
    /// `os.replace(tmp, "P.jpg")`.
    @Test(arguments: Kind.allCases)
    func aTemporaryPhotoRenamedOverThePhotoLeavesNoTrace(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/tmpk2x9_fq", O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
        try f.fs.write(h, Fixture.photoA, at: 0)
        try f.fs.close(h)
        #expect(try f.assetCount() == 2, "the temporary file became a photo by its close")
        try f.fs.rename("Albums/Trip/tmpk2x9_fq", "Albums/Trip/P.jpg")
        try f.expectPKept()
        #expect(try f.assetCount() == 1, "it vanished with the rename")
        #expect(try f.versions() == 2)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
        #expect(try f.names("Smart Albums/Recently Deleted") == [])
    }

    /// A temporary photo renamed over the photo while a handle still writes into it
    /// (the plain-directory oracle, seeds 443 and 461, found the temporary photo's last
    /// version there, and the bytes written after it lost at a close that returned 0):
    /// the bytes being written go with the name, as on a disk. The photo shows them at
    /// once, and the handle's close makes its next version.
    @Test(arguments: Kind.allCases)
    func aPhotoRenamedOverThePhotoWhileBeingWrittenTakesItsBytesAlong(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/tmpk2x9_fq", Fixture.photoA)
        let h = try f.fs.open("Albums/Trip/tmpk2x9_fq", O_RDWR, mode: 0)
        let tail = Array("tail".utf8), more = Array("more".utf8)
        try f.fs.write(h, tail, at: Int64(Fixture.photoA.count))
        try f.fs.rename("Albums/Trip/tmpk2x9_fq", "Albums/Trip/P.jpg")
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == Int64(Fixture.photoA.count + tail.count), "the bytes being written")
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA + tail)
        try f.fs.write(h, more, at: Int64(Fixture.photoA.count + tail.count))
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == Int64(Fixture.photoA.count + tail.count + more.count))
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA + tail + more)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA + tail + more)
        #expect(try f.versions() == 3, "the temporary photo's version, then the bytes its handle wrote")
        #expect(try f.assetCount() == 1, "the temporary photo vanished with the rename")
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
        try f.expectPKept()
    }

    /// The same with a handle that had written nothing yet (it failed with EIO: it still
    /// wrote into the temporary photo, which had vanished): it writes the photo.
    @Test(arguments: Kind.allCases)
    func aHandleOpenOnAPhotoRenamedOverThePhotoWritesThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/tmpk2x9_fq", Fixture.photoA)
        let h = try f.fs.open("Albums/Trip/tmpk2x9_fq", O_RDWR, mode: 0)
        try f.fs.rename("Albums/Trip/tmpk2x9_fq", "Albums/Trip/P.jpg")
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        let tail = Array("tail".utf8)
        try f.fs.write(h, tail, at: Int64(Fixture.photoA.count))
        #expect(try f.fs.stat("Albums/Other/P.jpg").size == Int64(Fixture.photoA.count + tail.count))
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA + tail)
        #expect(try f.versions() == 3)
        #expect(try f.assetCount() == 1)
        try f.expectPKept()
    }

    /// ftruncate through a handle cuts that handle's bytes, whatever its inode number
    /// names now. A photo in two albums, renamed in one over another photo while a handle
    /// writes into it: the handle's ftruncate cuts what the other photo shows, and the
    /// photo left in the other album keeps its bytes (the oracle, seed 443 run in a
    /// library that held its photos already, found that photo cut instead).
    @Test(arguments: Kind.allCases)
    func ftruncateThroughAHandleCutsItsOwnBytesAfterARename(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/T.jpg", Fixture.photoA)
        try f.fs.link("Albums/Trip/T.jpg", "Albums/Other/T.jpg")
        let h = try f.fs.open("Albums/Trip/T.jpg", O_RDWR, mode: 0)
        let tail = Array("tail".utf8)
        try f.fs.write(h, tail, at: Int64(Fixture.photoA.count))
        try f.fs.rename("Albums/Trip/T.jpg", "Albums/Trip/P.jpg")
        try f.fs.truncate(h, to: Int64(Fixture.photoA.count + 2))
        // P's other names: `Trip/P.jpg` is the name the kernel moved, which leads to T's
        // kernel inode until the daemon's drop of it lands (docs/namespace.md, the gap
        // after a rename that changes what a name is; under load it had not landed yet).
        #expect(try f.fs.stat("Albums/Other/P.jpg").size == Int64(Fixture.photoA.count + 2))
        #expect(try f.fs.get("Albums/Other/T.jpg") == Fixture.photoA, "the photo left in Other keeps its bytes")
        try f.fs.close(h)
        #expect(try f.fs.get("All Photos/P.jpg") == Fixture.photoA + Array(tail.prefix(2)))
        #expect(try f.fs.get("Albums/Other/T.jpg") == Fixture.photoA)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA + Array(tail.prefix(2)))
    }

    /// A handle open for writing on the photo, with nothing written, when a temporary
    /// file is renamed over it (the plain-directory oracle, seeds 421 and 483, found it
    /// reading and writing the new version): it keeps the version it had open, as the
    /// handle of a file replaced by a rename does on a disk, also once a new open has read
    /// the new version (on a mount, through another kernel inode); what it writes then
    /// is not saved.
    @Test(arguments: Kind.allCases)
    func aHandleOpenOnThePhotoAcrossASaveByRenameKeepsTheVersionItHadOpen(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.put("Albums/Trip/.P.jpg.tmp", Fixture.photoA)
        try f.fs.rename("Albums/Trip/.P.jpg.tmp", "Albums/Trip/P.jpg")
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        #expect(try f.fs.read(h, count: 100, at: 5) == Array(Fixture.photoP[5..<105]), "the version it had open")
        #expect(try f.fs.fstat(h).size == Int64(Fixture.photoP.count), "its size too")
        #expect(try f.fs.stat("Albums/Trip/P.jpg").size == Int64(Fixture.photoA.count))
        try f.fs.write(h, Array("xyz".utf8), at: 0)
        #expect(try f.fs.read(h, count: 6, at: 0) == Array("xyz".utf8) + Array(Fixture.photoP[3..<6]))
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
        #expect(try f.versions() == 2)
        try f.expectPKept()
    }

    /// The mode a save leaves: the photo's own, unless the temporary file's was set on
    /// purpose (rsync gives it the source's). A new file's mode and `mkstemp`'s 0600 say
    /// nothing: a photo shared with its group is not made private by Python's atomic save.
    @Test(arguments: Kind.allCases)
    func aSaveKeepsThePhotosModeUnlessTheTemporaryFileSetsOne(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.chmod("Albums/Trip/P.jpg", 0o640)
        try f.fs.put("Albums/Trip/.P.jpg.tmp", Fixture.photoA)
        try f.fs.rename("Albums/Trip/.P.jpg.tmp", "Albums/Trip/P.jpg")
        #expect(try f.fs.stat("Albums/Trip/P.jpg").mode & 0o7777 == 0o640, "a new file's mode")
        try f.fs.put("Albums/Trip/.P.jpg.tmp", Fixture.photoB)
        try f.fs.chmod("Albums/Trip/.P.jpg.tmp", 0o600)
        try f.fs.rename("Albums/Trip/.P.jpg.tmp", "Albums/Trip/P.jpg")
        #expect(try f.fs.stat("Albums/Trip/P.jpg").mode & 0o7777 == 0o640, "mkstemp's")
        try f.fs.put("Albums/Trip/.P.jpg.tmp", Fixture.photoP)
        try f.fs.chmod("Albums/Trip/.P.jpg.tmp", 0o755)
        try f.fs.rename("Albums/Trip/.P.jpg.tmp", "Albums/Trip/P.jpg")
        #expect(try f.fs.stat("Albums/Trip/P.jpg").mode & 0o7777 == 0o755, "one set on purpose")
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP)
        #expect(try f.versions() == 4)
    }

    /// vim and gedit: a hidden temporary file renamed over.
    @Test(arguments: Kind.allCases)
    func aHiddenTemporaryFileRenamedOverThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/.P.jpg.swp", Fixture.photoA)
        try f.fs.rename("Albums/Trip/.P.jpg.swp", "Albums/Trip/P.jpg")
        try f.expectPKept()
        #expect(try f.versions() == 2)
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func textRenamedOverThePhotoIsRefusedAndLosesNothing(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/.notes.tmp", Fixture.text)
        #expect(f.fs.errno { try f.fs.rename("Albums/Trip/.notes.tmp", "Albums/Trip/P.jpg") } == EINVAL)
        #expect(try f.fs.get("Albums/Trip/.notes.tmp") == Fixture.text, "the file comes out exactly as it went in")
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP)
        try f.expectPKept()
    }

    @Test(arguments: Kind.allCases)
    func aPhotoInAnotherFolderRenamedOverIsNotATemporaryFile(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/T.jpg", Fixture.photoA)
        try f.fs.link("Albums/Trip/T.jpg", "Albums/Other/T.jpg")
        try f.fs.rename("Albums/Trip/T.jpg", "Albums/Trip/P.jpg")
        #expect(try f.versions() == 2)
        #expect(try f.names("Albums/Other") == ["P.jpg", "T.jpg"], "T stays a photo of its own")
        #expect(try f.assetCount() == 2)
    }

    /// `ln -f new.jpg P.jpg` (and `cp -lf`): coreutils links the photo under a temporary
    /// name, then renames that over P.jpg. P gets the bytes as its next version, and the
    /// photo copied in moments ago stays under its own name: a review found it vanishing
    /// from the library, taken for a save's temporary photo.
    @Test(arguments: Kind.allCases)
    func aPhotoLinkedOverAnotherByATemporaryNameStays(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/new.jpg", Fixture.photoA)
        try f.fs.link("Albums/Trip/new.jpg", "Albums/Trip/CuXyZ1Ab")
        try f.fs.rename("Albums/Trip/CuXyZ1Ab", "Albums/Trip/P.jpg")
        #expect(try f.names("Albums/Trip") == ["P.jpg", "new.jpg"])
        #expect(try f.fs.get("Albums/Trip/new.jpg") == Fixture.photoA)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        #expect(try f.names("All Photos") == ["P.jpg", "new.jpg"])
        #expect(try f.versions() == 2, "P's first version and the one the link brought")
        #expect(try f.library().check().problems == [])
    }

    /// A photo renamed over another keeps the attributes set on it where it lives on (a
    /// review found `mv Q.jpg P.jpg` taking Q's caption away: Q's own was moved to P,
    /// which keeps its own).
    @Test(arguments: Kind.allCases)
    func aPhotoRenamedOverAnotherKeepsItsOwnAttributes(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/Q.jpg", Fixture.photoA)
        try f.fs.link("Albums/Trip/Q.jpg", "Albums/Other/Q.jpg")
        try f.fs.setxattr("Albums/Trip/Q.jpg", "user.xdg.comment", "Q's caption")
        try f.fs.setxattr("Albums/Trip/Q.jpg", "user.note", "Q's note")
        try f.fs.rename("Albums/Trip/Q.jpg", "Albums/Trip/P.jpg")
        // P asked by names the rename did not move (the moved one leads to Q's kernel
        // inode until the daemon's drop of it lands: docs/namespace.md).
        #expect(try f.fs.stat("Albums/Other/P.jpg").ino == f.p)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
        #expect(try f.versions() == 2)
        #expect(try f.fs.getxattr("Albums/Other/Q.jpg", "user.xdg.comment") == "Q's caption")
        #expect(try f.fs.getxattr("Albums/Other/Q.jpg", "user.note") == "Q's note")
        #expect(try f.fs.getxattr("Albums/Other/P.jpg", "user.xdg.comment") == "A caption", "P's own value wins")
        #expect(try f.fs.getxattr("Albums/Other/P.jpg", "user.note") == "Q's note", "as on a disk, the name shows what Q had")
        #expect(try f.assetCount() == 2)
    }

    /// Tags and a rating set through the mount, and the date the photo was added, outlive
    /// every kind of save, even of bytes whose XMP says other keywords and another rating
    /// (PRODUCT.md section 3: values set through the mount win and are kept; the photo
    /// keeps its date added, so it does not come back into Recently Added).
    @Test(arguments: Kind.allCases)
    func tagsRatingAndDateAddedSetBeforeOutliveEverySave(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.setxattr("Albums/Other/P.jpg", "user.xdg.tags", "Rome,Family")
        try f.fs.setxattr("Albums/Trip/P.jpg", "user.albumfs.rating", "2")
        let added = try #require(try f.library().asset(id: Int64(f.p))?.addedAt)
        let tagged = try Fixture.edited(Fixture.photoA, ["-XMP-dc:Subject=holiday", "-XMP-xmp:Rating=5"])
        func expectKept(_ save: String) throws {
            try f.expectPKept()
            #expect(try f.fs.getxattr("All Photos/P.jpg", "user.xdg.tags") == "Rome,Family", "\(save)")
            #expect(try f.fs.getxattr("Albums/Other/P.jpg", "user.albumfs.rating") == "2", "\(save)")
            #expect(try f.library().asset(id: Int64(f.p))?.addedAt == added, "\(save)")
        }
        try f.fs.put("Albums/Trip/P.jpg", tagged)
        try expectKept("written into")
        try f.fs.put("Albums/Trip/.P.jpg.tmp", Fixture.photoB)
        try f.fs.rename("Albums/Trip/.P.jpg.tmp", "Albums/Trip/P.jpg")
        try expectKept("a temporary photo renamed over")
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/P.jpg~")
        try f.fs.put("Albums/Trip/P.jpg", tagged)
        try expectKept("renamed away, new bytes under its name")
        #expect(try f.fs.get("Albums/Trip/P.jpg") == tagged)
        #expect(try f.versions() == 4)
    }

    /// exiftool -overwrite_original writes `P.jpg_exiftool_tmp` (a photo at its close) and
    /// renames it over `P.jpg`: what the new bytes say is the photo's, keywords and a
    /// rating written into their XMP included (they were wiped: the temporary photo's
    /// stored reading was handed on without them).
    @Test(arguments: Kind.allCases)
    func aTemporaryPhotoRenamedOverGivesThePhotoWhatItsBytesSay(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let tagged = try Fixture.edited(Fixture.photoA, ["-XMP-dc:Subject=holiday", "-XMP-dc:Subject=beach", "-XMP-xmp:Rating=4"])
        try f.fs.put("Albums/Trip/P.jpg_exiftool_tmp", tagged)
        try f.fs.rename("Albums/Trip/P.jpg_exiftool_tmp", "Albums/Trip/P.jpg")
        try f.expectPKept()
        #expect(try f.fs.get("Albums/Trip/P.jpg") == tagged)
        #expect(try f.fs.getxattr("Albums/Trip/P.jpg", "user.xdg.tags") == "holiday,beach")
        #expect(try f.fs.getxattr("Albums/Other/P.jpg", "user.albumfs.rating") == "4")
    }

    // MARK: the photo renamed away, a new file under its name

    /// ImageMagick's mogrify: `P.jpg` to `P.jpg~`, a new `P.jpg` (created, closed empty,
    /// opened again, written), then `P.jpg~` removed.
    @Test(arguments: Kind.allCases)
    func renamedAwayAndWrittenAgainKeepsThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/P.jpg~")
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR | O_CREAT | O_TRUNC, mode: 0o644)
        try f.fs.close(h)
        let again = try f.fs.open("Albums/Trip/P.jpg", O_RDWR | O_CREAT | O_TRUNC, mode: 0o644)
        try f.fs.write(again, Fixture.photoA, at: 0)
        try f.fs.close(again)
        try f.expectPKept()
        #expect(try f.versions() == 2)
        // The renamed-away name holds the previous bytes: the tool's backup, a plain file.
        #expect(try f.fs.get("Albums/Trip/P.jpg~") == Fixture.photoP)
        #expect(try f.names("Albums/Trip") == ["P.jpg", "P.jpg~"])
        try f.fs.unlink("Albums/Trip/P.jpg~")
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
        try f.expectPKept()
        #expect(try f.assetCount() == 1)
    }

    /// `cp -p` over a photo whose bytes carry no date, with bytes that carry none either:
    /// the mtime it sets dates the photo, as it does a photo copied in with it.
    @Test(arguments: Kind.allCases)
    func anMtimeSetWithANewVersionDatesAPhotoWithoutADate(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let first = try Fixture.edited(Fixture.photoA, ["-all="]), second = try Fixture.edited(Fixture.photoB, ["-all="])
        try f.fs.put("Albums/Trip/D.jpg", first)
        let h = try f.fs.open("Albums/Trip/D.jpg", O_WRONLY | O_TRUNC, mode: 0)
        try f.fs.write(h, second, at: 0)
        try f.fs.setMtime(h, nanoseconds: 1_431_950_400 * 1_000_000_000)  // 2015-05-18 12:00 UTC
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/D.jpg") == second)
        #expect(try f.fs.stat("Albums/Trip/D.jpg").mtimeNs == 1_431_950_400 * 1_000_000_000)
        // A date without an offset is shown in this machine's zone, and filed by it.
        let expected = Dates.iso8601(instant: 1_431_950_400)
        #expect(try f.fs.getxattr("All Photos/D.jpg", "user.albumfs.capture_date") == expected)
        let day = String(expected.prefix(10)), month = String(expected.prefix(7)), year = String(expected.prefix(4))
        #expect(try f.names("By Date/\(year)/\(month)/\(day)") == ["D.jpg"])
    }

    /// The backup renamed on before the new file is written (`P.jpg` to `P.jpg~`, then
    /// `P.jpg~` to `Old.jpg`): no save is under way any more, so `Old.jpg` keeps its bytes
    /// and a file written as `P.jpg` is a photo of its own, as on a disk (a review found
    /// the new bytes made the renamed photo's next version, and `P.jpg` missing).
    @Test(arguments: Kind.allCases)
    func aBackupRenamedOnEndsTheSave(_ kind: Kind) throws {
        // A hidden backup is a plain file until renamed to a visible name (then the photo
        // again, its bytes being the photo's); renamed on, it ends the save too.
        for (folder, backup) in [("Albums/Trip", "P.jpg~"), ("All Photos", "P.jpg~"), ("Albums/Trip", ".P.jpg.bak")] {
            let f = try Fixture(kind)
            try f.fs.rename(folder + "/P.jpg", folder + "/" + backup)
            try f.fs.rename(folder + "/" + backup, folder + "/Old.jpg")
            try f.fs.put(folder + "/P.jpg", Fixture.photoA)
            #expect(try f.fs.get(folder + "/Old.jpg") == Fixture.photoP, "\(folder)")
            #expect(try f.fs.get(folder + "/P.jpg") == Fixture.photoA, "\(folder)")
            #expect(try f.fs.stat(folder + "/Old.jpg").ino == f.p, "\(folder)")
            #expect(try f.fs.stat(folder + "/P.jpg").ino != f.p, "\(folder)")
            #expect(try f.versions() == 1, "\(folder)")
            #expect(try f.assetCount() == 2, "\(folder)")
        }
    }

    /// exiftool without -overwrite_original: `P.jpg_exiftool_tmp` written (it becomes a
    /// photo), `P.jpg` renamed to `P.jpg_original`, the temporary file renamed to `P.jpg`.
    @Test(arguments: Kind.allCases)
    func renamedAwayThenATemporaryPhotoRenamedInKeepsThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/P.jpg_exiftool_tmp", Fixture.photoA)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/P.jpg_original")
        try f.fs.rename("Albums/Trip/P.jpg_exiftool_tmp", "Albums/Trip/P.jpg")
        try f.expectPKept()
        #expect(try f.versions() == 2)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoA)
        #expect(try f.fs.get("Albums/Trip/P.jpg_original") == Fixture.photoP)
        #expect(try f.assetCount() == 1)
    }

    /// exiftool -overwrite_original_in_place: `P.jpg_exiftool_tmp` written (it becomes a
    /// photo), its bytes written into `P.jpg`, the temporary file removed: it leaves no
    /// photo behind, in the album or in All Photos (nor in Recently Deleted there).
    @Test(arguments: Kind.allCases)
    func aTemporaryPhotoCopiedIntoThePhotoAndRemovedLeavesNoTrace(_ kind: Kind) throws {
        let f = try Fixture(kind)
        for folder in ["Albums/Trip", "All Photos"] {
            try f.fs.put("\(folder)/P.jpg_exiftool_tmp", folder == "All Photos" ? Fixture.photoB : Fixture.photoA)
            let h = try f.fs.open("\(folder)/P.jpg", O_RDWR | O_TRUNC, mode: 0)
            try f.fs.write(h, folder == "All Photos" ? Fixture.photoB : Fixture.photoA, at: 0)
            try f.fs.close(h)
            try f.fs.unlink("\(folder)/P.jpg_exiftool_tmp")
            #expect(try f.names("All Photos") == ["P.jpg"], "\(folder)")
            #expect(try f.names("Smart Albums/Recently Deleted") == [], "\(folder)")
            #expect(try f.assetCount() == 1, "\(folder)")
        }
        try f.expectPKept()
        #expect(try f.versions() == 3)
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoB)
        // A photo copied in and removed moments later, whose bytes no save took, stays
        // in the library as `rm` in an album says.
        try f.fs.put("Albums/Trip/Q.jpg", Fixture.photoC)
        try f.fs.unlink("Albums/Trip/Q.jpg")
        #expect(try f.names("All Photos") == ["P.jpg", "Q.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func savesInAllPhotosKeepThePhotoToo(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.rename("All Photos/P.jpg", "All Photos/P.jpg~")
        try f.fs.put("All Photos/P.jpg", Fixture.photoA)
        try f.expectPKeptExceptAllPhotos(also: "P.jpg~")
        #expect(try f.versions() == 2)
        #expect(try f.fs.get("All Photos/P.jpg~") == Fixture.photoP)
        #expect(try f.assetCount() == 1)
    }

    @Test
    func aNameLeftForMoreThanAMinuteIsAnOrdinaryRename() throws {
        let f = try Fixture(.inProcess)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/P.jpg~")
        #expect(f.fs.advanceTime(seconds: 61))
        try f.fs.put("Albums/Trip/P.jpg", Fixture.photoA)
        #expect(try f.fs.stat("Albums/Trip/P.jpg~").ino == f.p)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").ino != f.p)
        #expect(try f.assetCount() == 2)
        #expect(try f.versions() == 1)
    }

    /// Photos renamed to names of their own, then the next card copied in: its
    /// `IMG_0001.jpg` is a new photo, not a save of the one renamed moments ago (which
    /// stays a photo, with its favorite and caption).
    @Test(arguments: Kind.allCases)
    func aPhotoRenamedToANameOfItsOwnHasMovedAndItsOldNameIsFree(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.setxattr("Albums/Trip/P.jpg", "user.xdg.comment", "grandma")
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/Grandma.jpg")
        try f.fs.put("Albums/Trip/P.jpg", Fixture.photoA)
        #expect(try f.fs.stat("Albums/Trip/Grandma.jpg").ino == f.p)
        #expect(try f.fs.get("Albums/Trip/Grandma.jpg") == Fixture.photoP)
        #expect(try f.fs.getxattr("Albums/Trip/Grandma.jpg", "user.xdg.comment") == "grandma")
        #expect(try f.fs.stat("Albums/Trip/P.jpg").ino != f.p)
        #expect(f.fs.errno { _ = try f.fs.getxattr("Albums/Trip/P.jpg", "user.xdg.comment") } == ENODATA)
        #expect(try f.assetCount() == 2)
        #expect(try f.versions() == 1)
    }

    // MARK: what a save keeps and what it reads again

    @Test(arguments: Kind.allCases)
    func savesNeverDedupe(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("All Photos/Q.jpg", Fixture.photoA)
        let q = try f.fs.stat("All Photos/Q.jpg").ino
        try f.fs.put("Albums/Trip/P.jpg", Fixture.photoA)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").ino == f.p)
        #expect(try f.fs.stat("All Photos/Q.jpg").ino == q)
        #expect(try f.versions() == 2)
        #expect(try f.assetCount() == 2)
    }

    @Test(arguments: Kind.allCases)
    func theCaptureDateIsReadAgainAndTheMtimeIsTheWrite(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let source = f.temp.sub("dated.jpg")
        try MediaFactory.image(at: source, width: 64, height: 48, exif: ["exif-ifd2-DateTimeOriginal": "2011:11:11 11:11:11"])
        let before = nowNanoseconds()
        try f.fs.put("Albums/Trip/P.jpg", file: source)
        #expect(try f.fs.getxattr("Albums/Trip/P.jpg", "user.albumfs.capture_date").hasPrefix("2011-11-11T11:11:11"))
        #expect(try f.fs.stat("Albums/Trip/P.jpg").mtimeNs >= before - 1_000_000_000, "st_mtime follows the edit")
        #expect(try f.names("By Date/2011/2011-11/2011-11-11") == ["P.jpg"])
        #expect(try f.fs.getxattr("Albums/Trip/P.jpg", "user.albumfs.width") == "64")
        try f.expectPKept()
        // A tool that sets the mtime afterwards (exiftool -P, touch -r) keeps it.
        let h = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY, mode: 0)
        try f.fs.setMtime(h, nanoseconds: 1_234_567_890_000_000_000)
        try f.fs.close(h)
        #expect(try f.fs.stat("Albums/Other/P.jpg").mtimeNs == 1_234_567_890_000_000_000)
    }

    @Test(arguments: Kind.allCases)
    func oCreatNeverFailsWithENOENT(_ kind: Kind) throws {
        let f = try Fixture(kind)
        for path in ["Albums/Trip/a.jpg", "Albums/Trip/.hidden", "All Photos/b.jpg", "Albums/c.txt"] {
            let h = try f.fs.open(path, O_WRONLY | O_CREAT, mode: 0o644)
            try f.fs.close(h)
            let again = try f.fs.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
            try f.fs.close(again)
        }
    }
}

extension Fixture {
    /// TA (in album Old) and TB (in All Photos, with a sidecar `TB.xmp` when asked), with
    /// photoA's and photoB's bytes, moved to Recently Deleted more than a second ago.
    /// Returns their deletion times.
    func trashTAAndTB(withSidecar: Bool) throws -> [Int64?] {
        try fs.mkdir("Albums/Old")
        try fs.put("Albums/Old/TA.jpg", Fixture.photoA)
        try fs.put("All Photos/TB.jpg", Fixture.photoB)
        if withSidecar { try fs.put("All Photos/TB.xmp", Array("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>".utf8)) }
        try fs.unlink("All Photos/TA.jpg")
        try fs.unlink("All Photos/TB.jpg")
        let times = try deletionTimes()
        usleep(1_100_000)  // deletion times are in seconds: a second deletion would show
        return times
    }

    /// The deletion times of the photos in Recently Deleted.
    func deletionTimes() throws -> [Int64?] { try library().assets(in: .smart(.recentlyDeleted)).map { $0.trashedAt } }

    /// P kept, with another name beside it in All Photos.
    func expectPKeptExceptAllPhotos(also other: String, file: String = #fileID, line: Int = #line) throws {
        let location = SourceLocation(fileID: file, filePath: file, line: line, column: 1)
        #expect(try fs.stat("Albums/Trip/P.jpg").ino == p, sourceLocation: location)
        #expect(try fs.stat("Albums/Other/P.jpg").ino == p, sourceLocation: location)
        #expect(try fs.getxattr("Albums/Trip/P.jpg", "user.albumfs.favorite") == "1", sourceLocation: location)
        #expect(try fs.getxattr("Albums/Other/P.jpg", "user.xdg.comment") == "A caption", sourceLocation: location)
        #expect(try names("All Photos").sorted() == ["P.jpg", other].sorted(), sourceLocation: location)
    }
}
