import AlbumCore
import Foundation
import Glibc
import TestSupport
import Testing

/// PRODUCT.md section 3's table, cell by cell, on the filesystem core in-process and on a
/// real mount: the same calls, the same outcomes.
@Suite(.serialized)
struct OperationTableTests {
    static let day = "By Date/2008/2008-10/2008-10-22"

    // MARK: removed while open

    @Test(arguments: Kind.allCases)
    func aPlainFileRemovedWhileOpenKeepsItsBytesForItsHandles(_ kind: Kind) throws {
        let f = try Fixture(kind)
        // mkstemp, then unlink (Python's TemporaryFile): the handle keeps the file.
        let h = try f.fs.open("Albums/Trip/scratch.tmp", O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
        try f.fs.write(h, Array("hello".utf8), at: 0)
        try f.fs.unlink("Albums/Trip/scratch.tmp")
        #expect(!f.fs.exists("Albums/Trip/scratch.tmp"))
        try f.fs.write(h, Array(" world".utf8), at: 5)
        #expect(try f.fs.read(h, count: 100, at: 0) == Array("hello world".utf8))
        let st = try f.fs.fstat(h)
        #expect(st.size == 11)
        #expect(st.nlink == 0)
        try f.fs.truncate(h, to: 5)
        #expect(try f.fs.read(h, count: 100, at: 0) == Array("hello".utf8))
        // Another file takes the name meanwhile; the removed bytes are not its.
        try f.fs.put("Albums/Trip/scratch.tmp", Array("other".utf8))
        #expect(try f.fs.read(h, count: 100, at: 0) == Array("hello".utf8))
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/scratch.tmp") == Array("other".utf8))
        // A reader of a file renamed over keeps the bytes it opened.
        try f.fs.put("Albums/Trip/new.txt", Fixture.text)
        let r = try f.fs.open("Albums/Trip/scratch.tmp", O_RDONLY, mode: 0)
        try f.fs.rename("Albums/Trip/new.txt", "Albums/Trip/scratch.tmp")
        #expect(try f.fs.read(r, count: 100, at: 0) == Array("other".utf8))
        #expect(try f.fs.fstat(r).nlink == 0)
        try f.fs.close(r)
        // Photo bytes written to a file removed while open never make a photo.
        let j = try f.fs.open("Albums/Trip/A.jpg", O_RDWR | O_CREAT | O_EXCL, mode: 0o644)
        try f.fs.unlink("Albums/Trip/A.jpg")
        try f.fs.write(j, Fixture.photoA, at: 0)
        try f.fs.close(j)
        #expect(try f.assetCount() == 1)
        #expect(try f.names("Albums/Trip") == ["P.jpg", "scratch.tmp"])
        #expect(try f.fs.get("Albums/Trip/scratch.tmp") == Fixture.text)
        try f.expectPKept()
    }

    /// A photo deleted for good while a viewer has it and its thumbnail open: as for a
    /// file removed while open on a disk, their handles keep reading the bytes they had,
    /// and `fstat` says `st_nlink` 0 and their size. Before, `fstat` was ENOENT, and so
    /// was a read the kernel checks the size for first (the thumbnail's, every read
    /// without passthrough past what it had cached). An mtime set through such a handle
    /// is the handle's to see, never written into the bytes, which another photo shares
    /// here (Q, a duplicate of P): a review found `futimens` there changing the blob,
    /// which every later read of Q would have refused as changed on disk.
    @Test(arguments: Kind.allCases)
    func aPhotoDeletedForGoodWhileOpenKeepsItsBytesForItsHandles(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/Q.jpg", Fixture.photoP)
        #expect(try f.assetCount() == 2)
        let photo = try f.fs.open("Albums/Trip/P.jpg", O_RDONLY, mode: 0)
        // By a view: the album the test made hides its `.thumbnails/` from this process.
        let thumbnail = try f.fs.open("All Photos/.thumbnails/P.jpg.jpg", O_RDONLY, mode: 0)
        let thumb = try f.fs.read(thumbnail, count: 1 << 20, at: 0)
        #expect(thumb.prefix(2) == [0xFF, 0xD8])
        try f.fs.unlink("All Photos/P.jpg")
        try f.fs.unlink("Smart Albums/Recently Deleted/P.jpg")
        #expect(!f.fs.exists("Albums/Trip/P.jpg"))
        #expect(!f.fs.exists("All Photos/.thumbnails/P.jpg.jpg"))
        for (handle, bytes) in [(photo, Fixture.photoP), (thumbnail, thumb)] {
            let st = try f.fs.fstat(handle)
            #expect(st.nlink == 0)
            #expect(st.size == Int64(bytes.count))
            #expect(try f.fs.read(handle, count: 1 << 20, at: 0) == bytes)
        }
        let mtime: Int64 = 1_234_567_890_000_000_000
        try f.fs.setMtime(photo, nanoseconds: mtime)
        #expect(try f.fs.fstat(photo).mtimeNs == mtime)
        try f.fs.close(photo)
        try f.fs.close(thumbnail)
        #expect(try f.assetCount() == 1)
        #expect(!f.fs.exists("Albums/Trip/P.jpg"))
        #expect(try f.fs.get("Albums/Trip/Q.jpg") == Fixture.photoP)
        #expect(try f.fs.stat("Albums/Trip/Q.jpg").mtimeNs != mtime)
    }

    /// The same with a handle open for writing beside the readers (an editor holding the
    /// photo while a viewer reads it): every handle keeps working as a removed file's
    /// does. The readers keep the version they opened (they never see a writer's bytes
    /// before its close, PRODUCT.md section 4); the writer goes on with its own bytes,
    /// which no close saves. Before, the readers' `fstat` was ENOENT.
    @Test(arguments: Kind.allCases)
    func aPhotoDeletedForGoodWhileReadAndWrittenKeepsItsBytesForEveryHandle(_ kind: Kind) throws {
        let f = try Fixture(kind)
        // A writer with nothing written at the deletion (it goes on with the version it
        // had), then one that had written (its unsaved bytes stay its own).
        try expectEveryHandleKept(f, "P.jpg", Fixture.photoP, writtenBefore: false)
        try f.fs.put("Albums/Trip/A.jpg", Fixture.photoA)
        try expectEveryHandleKept(f, "A.jpg", Fixture.photoA, writtenBefore: true)
        #expect(try f.names("All Photos") == [])
    }

    /// The same while the open that created the photo is still held (a copy of its
    /// descriptor kept, as `dup` or a forked helper keeps one; on a mount, as its release
    /// is on its way after `close` returned): the reader keeps the version, the writer
    /// reads what it wrote, and a save then is what the writer wrote, while the reader
    /// still reads its version. Before, on a mount, the reader was cached on the kernel
    /// inode the creating open held and the writer joined it there: the reader read the
    /// writer's "abc" (every time with the copy kept; once in about 45 runs of the test
    /// above, the creating open's release late).
    @Test(arguments: Kind.allCases)
    func aPhotoReadAndWrittenWhileItsCreatorIsHeldKeepsEachHandlesBytes(_ kind: Kind) throws {
        let f = try Fixture(kind)
        func created(_ name: String, _ bytes: [UInt8]) throws -> Int {
            let creator = try f.fs.open("Albums/Trip/" + name, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
            try f.fs.write(creator, bytes, at: 0)
            let kept = try f.fs.duplicate(creator)
            try f.fs.close(creator)
            return kept
        }
        let keptA = try created("A.jpg", Fixture.photoA)
        #expect(try f.assetCount() == 2)
        try expectEveryHandleKept(f, "A.jpg", Fixture.photoA, writtenBefore: false, left: ["P.jpg"])
        try f.fs.close(keptA)
        #expect(try f.assetCount() == 1)

        let keptB = try created("B.jpg", Fixture.photoB)
        let reader = try f.fs.open("Albums/Trip/B.jpg", O_RDONLY, mode: 0)
        #expect(try f.fs.read(reader, count: 4, at: 0) == Array(Fixture.photoB[0..<4]))
        // Another photo's bytes written over it: a save.
        let writer = try f.fs.open("Albums/Trip/B.jpg", O_RDWR, mode: 0)
        try f.fs.write(writer, Fixture.photoA, at: 0)
        try f.fs.truncate(writer, to: Int64(Fixture.photoA.count))
        #expect(try f.fs.read(writer, count: 1 << 20, at: 0) == Fixture.photoA)
        #expect(try f.fs.read(reader, count: 1 << 20, at: 0) == Fixture.photoB)
        try f.fs.close(writer)
        let saved = Fixture.photoA
        #expect(try f.fs.get("Albums/Trip/B.jpg") == saved)
        #expect(try f.fs.read(reader, count: 1 << 20, at: 0) == Fixture.photoB)
        try f.fs.close(reader)
        try f.fs.close(keptB)
        #expect(try f.fs.get("Albums/Trip/B.jpg") == saved)
        #expect(try f.assetCount() == 2)
    }

    /// A photo's creating open, kept with a `dup` past its close, grows and cuts the photo
    /// while a reader reads the version its close saved: `fstat` through each handle, and
    /// `stat` by name, say the size of the bytes that handle (or the name) holds, and the
    /// reader reads its version. Before, on the default mount, the reader took the kernel
    /// inode in passthrough beside the creating open (in direct I/O, no I/O mode), whose
    /// size was then the reader's: `fstat` through the writer said the saved size after
    /// it wrote past it, and an append would have started there.
    @Test(arguments: Kind.allCases)
    func aPhotoGrownThroughItsKeptCreatorWhileReadTellsEachHandleItsSize(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let creator = try f.fs.open("Albums/Trip/B.jpg", O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        try f.fs.write(creator, Fixture.photoB, at: 0)
        let kept = try f.fs.duplicate(creator)
        try f.fs.close(creator)
        let size = Int64(Fixture.photoB.count)
        let reader = try f.fs.open("Albums/Trip/B.jpg", O_RDONLY, mode: 0)
        #expect(try f.fs.read(reader, count: 4, at: 0) == Array(Fixture.photoB[0..<4]))
        let tail = Array("tail".utf8)
        try f.fs.write(kept, tail, at: size)
        #expect(try f.fs.fstat(kept).size == size + 4)
        #expect(try f.fs.stat("Albums/Trip/B.jpg").size == size + 4)
        #expect(try f.fs.fstat(reader).size == size)
        #expect(try f.fs.read(reader, count: 1 << 20, at: 0) == Fixture.photoB)
        try f.fs.truncate(kept, to: 0)
        #expect(try f.fs.fstat(kept).size == 0)
        #expect(try f.fs.stat("Albums/Trip/B.jpg").size == 0)
        #expect(try f.fs.read(reader, count: 1 << 20, at: 0) == Fixture.photoB)
        try f.fs.write(kept, Fixture.photoA, at: 0)
        try f.fs.close(kept)
        #expect(try f.fs.get("Albums/Trip/B.jpg") == Fixture.photoA)
        #expect(try f.fs.read(reader, count: 1 << 20, at: 0) == Fixture.photoB)
        #expect(try f.fs.fstat(reader).size == size)
        try f.fs.close(reader)
        #expect(try f.assetCount() == 2)
    }

    /// A reader keeps the version it opened while a save makes the next one (on a mount,
    /// on a kernel inode of its own, whose `fstat` says that version's size); a writer
    /// opened after the save holds the next one. Deleted for good then, each handle
    /// reads its own version and `fstat` through it says that version's size (the
    /// reader's said the writer's; a review found the writer's saying the reader's).
    @Test(arguments: Kind.allCases)
    func aPhotoSavedWhileReadThenDeletedForGoodKeepsEachHandlesVersion(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let reader = try f.fs.open("Albums/Trip/P.jpg", O_RDONLY, mode: 0)
        #expect(try f.fs.read(reader, count: 4, at: 0) == Array(Fixture.photoP[0..<4]))
        try f.fs.put("Albums/Trip/P.jpg", Fixture.photoB)
        let writer = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        #expect(try f.fs.fstat(reader).size == Int64(Fixture.photoP.count))
        #expect(try f.fs.fstat(writer).size == Int64(Fixture.photoB.count))
        try f.fs.unlink("All Photos/P.jpg")
        try f.fs.unlink("Smart Albums/Recently Deleted/P.jpg")
        for (handle, bytes) in [(writer, Fixture.photoB), (reader, Fixture.photoP)] {
            #expect(try f.fs.fstat(handle).size == Int64(bytes.count))
            #expect(try f.fs.fstat(handle).nlink == 0)
        }
        #expect(try f.fs.read(writer, count: 1 << 20, at: 0) == Fixture.photoB)
        #expect(try f.fs.read(reader, count: 1 << 20, at: 0) == Fixture.photoP)
        try f.fs.close(reader)
        #expect(try f.fs.fstat(writer).size == Int64(Fixture.photoB.count))
        try f.fs.close(writer)
        #expect(try f.assetCount() == 0)
    }

    /// Photo `name` of album Trip, with `bytes`, deleted for good while a reader and a
    /// writer hold it; the writer writes 3 bytes before or after the deletion. `left`:
    /// the photos of Trip after it.
    private func expectEveryHandleKept(_ f: Fixture, _ name: String, _ bytes: [UInt8], writtenBefore: Bool,
                                       left: [String] = []) throws {
        let reader = try f.fs.open("Albums/Trip/" + name, O_RDONLY, mode: 0)
        let writer = try f.fs.open("Albums/Trip/" + name, O_RDWR, mode: 0)
        let written = Array("abc".utf8)
        #expect(try f.fs.read(reader, count: 4, at: 0) == Array(bytes[0..<4]))
        if writtenBefore { try f.fs.write(writer, written, at: 0) }
        try f.fs.unlink("All Photos/" + name)
        try f.fs.unlink("Smart Albums/Recently Deleted/" + name)
        #expect(!f.fs.exists("Albums/Trip/" + name))
        for handle in [reader, writer] {
            let st = try f.fs.fstat(handle)
            #expect(st.nlink == 0)
            #expect(st.size == Int64(bytes.count))
        }
        if !writtenBefore { try f.fs.write(writer, written, at: 0) }
        #expect(try f.fs.read(writer, count: 3, at: 0) == written)
        #expect(try f.fs.fstat(reader).nlink == 0)
        let got = try f.fs.read(reader, count: 1 << 20, at: 0)
        #expect(got == bytes, "\(name): the reader read \(got.count) bytes of \(bytes.count), beginning \(Array(got.prefix(6))); first differing at \(zip(got, bytes).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
        try f.fs.close(reader)
        // ftruncate and futimens through the writer (an ftruncate there made setattr
        // ask itself again without end: a stack overflow that took the daemon down).
        try f.fs.truncate(writer, to: 5)
        #expect(try f.fs.fstat(writer).size == 5)
        #expect(try f.fs.read(writer, count: 100, at: 0) == written + bytes[3..<5])
        let mtime: Int64 = 1_234_567_890_000_000_000
        try f.fs.setMtime(writer, nanoseconds: mtime)
        #expect(try f.fs.fstat(writer).mtimeNs == mtime)
        #expect(try f.fs.fstat(writer).nlink == 0)
        try f.fs.close(writer)
        #expect(try f.assetCount() == left.count)
        #expect(try f.names("Albums/Trip") == left)
    }

    /// A photo renamed to a name that stays plain while open for writing hands its
    /// handles to the file the name becomes; removed then, that file keeps its bytes for
    /// them as any file removed while open does. Seed 3045 of the plain-directory oracle
    /// found `ftruncate` through such a handle failing with ENOENT (the handle is on the
    /// photo's number, the removed file has its own).
    @Test(arguments: Kind.allCases)
    func aPhotoRenamedToAPlainNameThenRemovedKeepsItsBytesForItsHandles(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let h = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/.P.jpg.tmp")
        try f.fs.unlink("Albums/Trip/.P.jpg.tmp")
        #expect(try f.names("Albums/Trip") == [])
        try f.fs.write(h, Array("abc".utf8), at: 0)
        #expect(try f.fs.fstat(h).size == Int64(Fixture.photoP.count))
        try f.fs.truncate(h, to: 3)
        #expect(try f.fs.fstat(h).size == 3)
        #expect(try f.fs.read(h, count: 100, at: 0) == Array("abc".utf8))
        try f.fs.truncate(h, to: 5)
        #expect(try f.fs.read(h, count: 100, at: 0) == Array("abc".utf8) + [0, 0])
        try f.fs.close(h)
        #expect(try f.names("Albums/Trip") == [])
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoP, "the photo keeps its version")
        #expect(try f.versions() == 1)
        #expect(try f.names("All Photos") == ["P.jpg"])
    }

    /// A file that became a photo the library held (P's bytes closed under a new name in
    /// a folder without P: P's membership there) while a handle of its own stayed open:
    /// what that handle changes shows by path, also while a reader of the photo holds it
    /// (on a mount, in passthrough, whose kernel inode reports the size of the version
    /// it reads): the photo moves past the reader. Seed 3178 of the plain-directory
    /// oracle found `stat` showing the old size there for good. An open by path finds
    /// the new bytes at once; a `stat` by path, once the kernel has dropped the names
    /// that led to the reader's kernel inode, which the daemon sends beside its reply
    /// (the moment between is the one docs/namespace.md names for every such move).
    @Test(arguments: Kind.allCases)
    func aHandleOfAFileThatBecameAHeldPhotoChangesItForEveryPath(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/New")
        let h = try f.handleOfAFileThatBecomesP("Albums/New/c.jpg")
        let r = try f.fs.open("Albums/New/c.jpg", O_RDONLY, mode: 0)
        try f.fs.truncate(h, to: 200_000)
        #expect(try f.fs.get("Albums/New/c.jpg") == Fixture.photoP + [UInt8](repeating: 0, count: 200_000 - Fixture.photoP.count))
        for path in ["Albums/New/c.jpg", "Albums/Trip/P.jpg"] {
            let deadline = Date().addingTimeInterval(2)
            while try f.fs.stat(path).size != 200_000 && Date() < deadline { usleep(10_000) }
            #expect(try f.fs.stat(path).size == 200_000, "\(path) shows the new size within 2 s")
        }
        try f.fs.close(h)
        #expect(try f.fs.read(r, count: 4, at: 0) == Array(Fixture.photoP[0..<4]))
        try f.fs.close(r)
        #expect(try f.fs.stat("Albums/Other/P.jpg").size == 200_000)
        #expect(try f.versions() == 2, "the grown bytes are P's next version")
        try f.expectPKept()
    }

    /// Handles of one file open through two numbers (the file's own, and the photo's
    /// once the file became a photo the library held) have the same bytes: what one
    /// changes, the other reads at once, as handles of one file on a disk do. Seed 7060
    /// of the oracle found a handle of the file still reading what an `ftruncate`
    /// through a handle of the photo had cut (its kernel inode kept the size).
    @Test(arguments: Kind.allCases)
    func handlesOfAFileOpenThroughTwoNumbersSeeEachOthersChanges(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/New")
        let h = try f.handleOfAFileThatBecomesP("Albums/New/a.txt")
        try f.fs.truncate(h, to: 200_000)
        let g = try f.fs.open("Albums/New/a.txt", O_RDWR, mode: 0)
        #expect(try f.fs.read(h, count: 300_000, at: 0).count == 200_000)
        try f.fs.write(g, Array("XXXX".utf8), at: 100)
        #expect(try f.fs.read(h, count: 4, at: 100) == Array("XXXX".utf8))
        try f.fs.truncate(g, to: 0)
        #expect(try f.fs.read(h, count: 300_000, at: 0) == [])
        #expect(try f.fs.fstat(h).size == 0)
        try f.fs.write(h, Fixture.photoB, at: 0)
        #expect(try f.fs.read(g, count: 300_000, at: 0) == Fixture.photoB)
        try f.fs.close(g)
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoB)
        #expect(try f.versions() == 2)
        try f.expectPKept()
    }

    // MARK: bytes several photos hold

    /// A photo and its Duplicate (two assets, one bytes) copied into a new folder (`cp
    /// -r`, `tar x`): each file is the asset of its name, no new asset; once the folder
    /// shows both, another copy is a Duplicate. A review found every copy adding a new
    /// asset (the first holder was always the one tried).
    @Test(arguments: Kind.allCases)
    func bytesSeveralPhotosHoldArriveAsTheOneOfTheirName(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/DP")
        try f.fs.put("Albums/DP/one.jpg", Fixture.photoA)
        try f.fs.put("Albums/DP/two.jpg", Fixture.photoA)
        let one = try f.fs.stat("Albums/DP/one.jpg").ino, two = try f.fs.stat("Albums/DP/two.jpg").ino
        #expect(one != two, "copied where it shows: a Duplicate")
        let assets = try f.assetCount()
        try f.fs.mkdir("Albums/DP2")
        try f.fs.put("Albums/DP2/two.jpg", Fixture.photoA)
        try f.fs.put("Albums/DP2/one.jpg", Fixture.photoA)
        #expect(try f.fs.stat("Albums/DP2/one.jpg").ino == one)
        #expect(try f.fs.stat("Albums/DP2/two.jpg").ino == two)
        #expect(try f.assetCount() == assets)
        try f.fs.put("Albums/DP2/three.jpg", Fixture.photoA)
        #expect(try f.assetCount() == assets + 1)
        // Into a folder that shows none of them, under another name: the first; a second
        // copy there, named like none, is a Duplicate (not the other photo, which the
        // review found edited by the copy's edits).
        try f.fs.mkdir("Albums/DP3")
        try f.fs.put("Albums/DP3/x.jpg", Fixture.photoA)
        #expect(try f.assetCount() == assets + 1)
        try f.fs.put("Albums/DP3/y.jpg", Fixture.photoA)
        #expect(try f.assetCount() == assets + 2)
        #expect(try f.fs.stat("Albums/DP3/y.jpg").ino != two)
    }

    // MARK: a photo that comes back

    /// A deleted or hidden photo's album entry gives way to a plain file that takes its
    /// name (it comes back as "P (2).jpg"), as it does to a photo; and a photo restored by
    /// a move into an album it was in is one entry there, under the name the move gave.
    /// A review found both showing a name twice (the first: two entries `P.jpg`, one of
    /// them unreadable).
    @Test(arguments: Kind.allCases)
    func aPhotoThatComesBackShowsEachNameOnce(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let gone = f.gone
        try f.fs.unlink("All Photos/P.jpg")
        #expect(gone("Albums/Trip/P.jpg"))
        try f.fs.put("Albums/Trip/P.jpg", Fixture.text)
        try f.fs.rename("Smart Albums/Recently Deleted/P.jpg", "All Photos/P.jpg")
        #expect(try f.names("Albums/Trip") == ["P (2).jpg", "P.jpg"])
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.text)
        #expect(try f.fs.stat("Albums/Trip/P (2).jpg").ino == f.p)
        // Hidden, then a plain file takes the name of its entry in Other: the same.
        try f.fs.rename("All Photos/P.jpg", "Smart Albums/Hidden/P.jpg")
        #expect(gone("Albums/Other/P.jpg"))
        try f.fs.put("Albums/Other/P.jpg", Fixture.text)
        try f.fs.rename("Smart Albums/Hidden/P.jpg", "All Photos/P.jpg")
        #expect(try f.names("Albums/Other") == ["P (2).jpg", "P.jpg"])
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.text)
        // Deleted again, and moved back into Trip under a new name: one entry there.
        try f.fs.unlink("All Photos/P.jpg")
        try f.fs.rename("Smart Albums/Recently Deleted/P.jpg", "Albums/Trip/Q.jpg")
        #expect(try f.names("Albums/Trip") == ["P.jpg", "Q.jpg"])
        #expect(try f.fs.stat("Albums/Trip/Q.jpg").ino == f.p)
        #expect(try f.names("Albums/Other") == ["P (2).jpg", "P.jpg"])
        // Hidden, and moved back into Trip under another name: one entry there too.
        try f.fs.rename("All Photos/P.jpg", "Smart Albums/Hidden/P.jpg")
        #expect(gone("Albums/Trip/Q.jpg"))
        try f.fs.rename("Smart Albums/Hidden/P.jpg", "Albums/Trip/R.jpg")
        #expect(try f.names("Albums/Trip") == ["P.jpg", "R.jpg"])
        // Deleted, then the same bytes copied into Trip again: the photo comes back, one
        // entry under the name copied to (a review found two: the entry had given way to
        // the file being written).
        try f.fs.unlink("All Photos/P.jpg")
        #expect(gone("Albums/Trip/R.jpg"))
        try f.fs.unlink("Albums/Trip/P.jpg")
        try f.fs.put("Albums/Trip/R.jpg", Fixture.photoP)
        #expect(try f.names("Albums/Trip") == ["R.jpg"])
        #expect(try f.fs.stat("Albums/Trip/R.jpg").ino == f.p)
        #expect(try f.fs.stat("Albums/Trip/R.jpg").nlink == 2)
    }

    /// The same while the file taking the name is still being written: the deleted or
    /// hidden photo's entry does not give way to a file still open (it may yet be that
    /// photo copied back in), so a photo brought back meanwhile showed its entry and the
    /// file under one name, and that name opened the photo, not the file being written.
    @Test(arguments: Kind.allCases)
    func aPhotoThatComesBackWhileAFileOfItsNameIsWrittenShowsEachNameOnce(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let gone = f.gone
        try f.fs.unlink("All Photos/P.jpg")
        #expect(gone("Albums/Trip/P.jpg"))
        let notes = try f.fs.open("Albums/Trip/P.jpg", O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        try f.fs.write(notes, Fixture.text, at: 0)
        try f.fs.rename("Smart Albums/Recently Deleted/P.jpg", "All Photos/P.jpg")
        #expect(try f.names("Albums/Trip") == ["P (2).jpg", "P.jpg"])
        try f.fs.close(notes)
        #expect(try f.names("Albums/Trip") == ["P (2).jpg", "P.jpg"])
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.text)
        #expect(try f.fs.stat("Albums/Trip/P (2).jpg").ino == f.p)
        // Hidden, and another photo written under its entry's name in Other meanwhile.
        try f.fs.rename("All Photos/P.jpg", "Smart Albums/Hidden/P.jpg")
        #expect(gone("Albums/Other/P.jpg"))
        let photo = try f.fs.open("Albums/Other/P.jpg", O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        try f.fs.write(photo, Fixture.photoA, at: 0)
        try f.fs.rename("Smart Albums/Hidden/P.jpg", "All Photos/P.jpg")
        #expect(try f.names("Albums/Other") == ["P (2).jpg", "P.jpg"])
        try f.fs.close(photo)
        #expect(try f.names("Albums/Other") == ["P (2).jpg", "P.jpg"])
        #expect(try f.fs.get("Albums/Other/P.jpg") == Fixture.photoA)
        #expect(try f.fs.stat("Albums/Other/P.jpg").ino != f.p)
        #expect(try f.fs.stat("Albums/Other/P (2).jpg").ino == f.p)
        #expect(try f.library().check().problems == [])
    }

    /// Favorites and Hidden list photos by their own names and keep plain files too: a
    /// photo that starts to show there where a file has its name shows under the next
    /// free one, as in All Photos. It showed twice, and the file's name opened the photo.
    @Test(arguments: Kind.allCases)
    func aPhotoThatStartsToShowInFavoritesOrHiddenWhereAFileHasItsNameTakesTheNextFreeOne(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/A.jpg", Fixture.photoA)
        let a = try f.fs.stat("Albums/Trip/A.jpg").ino
        try f.fs.put("Smart Albums/Favorites/A.jpg", Fixture.text)
        try f.fs.setxattr("Albums/Trip/A.jpg", "user.albumfs.favorite", "1")
        #expect(try f.names("Smart Albums/Favorites") == ["A (2).jpg", "A.jpg", "P.jpg"])
        #expect(try f.fs.get("Smart Albums/Favorites/A.jpg") == Fixture.text)
        #expect(try f.fs.stat("Smart Albums/Favorites/A (2).jpg").ino == a)
        #expect(try f.names("All Photos") == ["A (2).jpg", "P.jpg"])
        // Renamed in All Photos to the name the file has in Favorites, where it shows: EEXIST.
        #expect(f.fs.errno { try f.fs.rename("All Photos/P.jpg", "All Photos/A.jpg") } == EEXIST)
        #expect(try f.names("All Photos") == ["A (2).jpg", "P.jpg"])
        // Hidden where a file has its name in Hidden.
        try f.fs.put("Albums/Trip/B.jpg", Fixture.photoB)
        let b = try f.fs.stat("Albums/Trip/B.jpg").ino
        try f.fs.put("Smart Albums/Hidden/B.jpg", Fixture.text)
        try f.fs.setxattr("Albums/Trip/B.jpg", "user.albumfs.hidden", "1")
        #expect(try f.names("Smart Albums/Hidden") == ["B (2).jpg", "B.jpg"])
        #expect(try f.fs.get("Smart Albums/Hidden/B.jpg") == Fixture.text)
        #expect(try f.fs.stat("Smart Albums/Hidden/B (2).jpg").ino == b)
        // A new photo copied into Favorites under a name another photo has takes the next
        // free one, which no file there may have either.
        try f.fs.put("Smart Albums/Favorites/B (2) (2).jpg", Fixture.text)
        try f.fs.put("Smart Albums/Favorites/B (2).jpg", Fixture.photoC)
        #expect(try f.names("Smart Albums/Favorites") == ["A (2).jpg", "A.jpg", "B (2) (2).jpg", "B (2) (3).jpg", "P.jpg"])
        #expect(try f.fs.get("Smart Albums/Favorites/B (2) (3).jpg") == Fixture.photoC)
        #expect(try f.library().check().problems == [])
    }

    /// Two photos in Recently Deleted with their sidecars: on PostgreSQL the second `rm`
    /// failed with EIO (a trashed sidecar's placeholder name began with a NUL byte, which
    /// PostgreSQL's text cuts short: every one was the same empty name). NameFuzzTests'
    /// two-host run found it.
    @Test(arguments: Kind.allCases)
    func twoPhotosGoToRecentlyDeletedWithTheirSidecarsAndComeBack(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let xmp = Array("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>\n".utf8)
        try f.fs.put("Albums/Other/A.jpg", Fixture.photoA)
        try f.fs.put("Albums/Other/A.xmp", xmp)
        try f.fs.put("Albums/Other/B.jpg", Fixture.photoB)
        try f.fs.put("Albums/Other/B.xmp", xmp)
        try f.fs.unlink("All Photos/A.jpg")
        try f.fs.unlink("All Photos/B.jpg")
        #expect(try f.names("Albums/Other") == ["P.jpg"])
        try f.fs.rename("Smart Albums/Recently Deleted/A.jpg", "All Photos/A.jpg")
        try f.fs.rename("Smart Albums/Recently Deleted/B.jpg", "All Photos/B.jpg")
        #expect(try f.names("Albums/Other") == ["A.jpg", "A.xmp", "B.jpg", "B.xmp", "P.jpg"])
        #expect(try f.fs.get("Albums/Other/B.xmp") == xmp)
        #expect(try f.library().check().problems == [])
    }

    /// A sidecar that went to Recently Deleted with its photo comes back under the next
    /// free name when a sub-album took its name meanwhile (only another file's was
    /// looked at: the album and the sidecar showed under one name).
    @Test(arguments: Kind.allCases)
    func aSidecarThatComesBackToANameAnAlbumTookTakesTheNextFreeOne(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/P.xmp", Array("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>\n".utf8))
        try f.fs.unlink("All Photos/P.jpg")
        #expect(try f.names("Albums/Trip") == [])
        try f.fs.mkdir("Albums/Trip/P.xmp")
        try f.fs.rename("Smart Albums/Recently Deleted/P.jpg", "All Photos/P.jpg")
        #expect(try f.names("Albums/Trip") == ["P (2).xmp", "P.jpg", "P.xmp"])
        #expect(try f.fs.stat("Albums/Trip/P.xmp").isDirectory)
        #expect(try f.fs.get("Albums/Trip/P (2).xmp") == Array("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>\n".utf8))
        #expect(try f.library().check().problems == [])
    }

    // MARK: fallocate

    @Test(arguments: Kind.allCases)
    func fallocateWorksAsOnADisk(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let keep: Int32 = 0x01, punch: Int32 = 0x02  // FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE
        // A plain file: grown, reserved beyond its size, a hole punched.
        let h = try f.fs.open("Albums/Trip/space.bin", O_RDWR | O_CREAT | O_EXCL, mode: 0o644)
        try f.fs.fallocate(h, mode: 0, offset: 0, length: 4096)
        #expect(try f.fs.fstat(h).size == 4096)
        try f.fs.write(h, Array("hello".utf8), at: 0)
        try f.fs.fallocate(h, mode: keep, offset: 0, length: 1 << 20)
        #expect(try f.fs.fstat(h).size == 4096)
        try f.fs.write(h, Array("world".utf8), at: 8)
        try f.fs.fallocate(h, mode: punch | keep, offset: 0, length: 8)
        try f.fs.close(h)
        #expect(try f.fs.get("Albums/Trip/space.bin") == [UInt8](repeating: 0, count: 8) + Array("world".utf8) + [UInt8](repeating: 0, count: 4096 - 13))
        // rsync --preallocate: the whole size reserved, then written: a photo, as a cp.
        let a = try f.fs.open("Albums/Trip/A.jpg", O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        try f.fs.fallocate(a, mode: keep, offset: 0, length: Int64(Fixture.photoA.count))
        try f.fs.write(a, Fixture.photoA, at: 0)
        try f.fs.close(a)
        #expect(try f.assetCount() == 2)
        #expect(try f.fs.get("Albums/Trip/A.jpg") == Fixture.photoA)
        // Space reserved in a photo open for writing changes none of its bytes: no version.
        let p = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.fallocate(p, mode: keep, offset: 0, length: 1 << 20)
        try f.fs.fallocate(p, mode: 0, offset: 0, length: Int64(Fixture.photoP.count))
        #expect(f.fs.errno { try f.fs.fallocate(p, mode: 0x08 /* COLLAPSE_RANGE */, offset: 0, length: 4096) } == EOPNOTSUPP)
        try f.fs.close(p)
        #expect(try f.versions() == 1)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP)
        #expect(try f.fs.stat("Albums/Trip/P.jpg").ino == f.p)
        // Grown, it is new bytes of the photo (zeros after its end), a version as any write.
        let g = try f.fs.open("Albums/Trip/P.jpg", O_RDWR, mode: 0)
        try f.fs.fallocate(g, mode: 0, offset: 0, length: Int64(Fixture.photoP.count + 10))
        try f.fs.close(g)
        #expect(try f.versions() == 2)
        #expect(try f.fs.get("Albums/Trip/P.jpg") == Fixture.photoP + [UInt8](repeating: 0, count: 10))
        // Only a handle open for writing allocates.
        let r = try f.fs.open("Albums/Trip/space.bin", O_RDONLY, mode: 0)
        #expect(f.fs.errno { try f.fs.fallocate(r, mode: 0, offset: 0, length: 8192) } == EBADF)
        try f.fs.close(r)
        #expect(try f.fs.stat("Albums/Trip/space.bin").size == 4096)
    }

    // MARK: create, cp in

    @Test(arguments: Kind.allCases)
    func cpIntoAnAlbumImportsAndAddsIt(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/A.jpg", Fixture.photoA)
        let a = try f.fs.stat("Albums/Trip/A.jpg")
        #expect(try f.fs.stat("All Photos/A.jpg").ino == a.ino)
        #expect(try f.names("Albums/Trip") == ["A.jpg", "P.jpg"])
        #expect(try f.fs.get("Albums/Trip/A.jpg") == Fixture.photoA)
        #expect(try f.assetCount() == 2)
    }

    @Test(arguments: Kind.allCases)
    func cpIntoAllPhotosImports(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("All Photos/A.jpg", Fixture.photoA)
        #expect(try f.names("All Photos") == ["A.jpg", "P.jpg"])
        #expect(try f.library().memberships(ofAsset: Int64(f.fs.stat("All Photos/A.jpg").ino)).isEmpty)
        #expect(try f.assetCount() == 2)
    }

    /// A plain file kept in All Photos holds its name there: a photo of that name
    /// copied in elsewhere shows under the next free one (a review found two entries of
    /// one name, the file behind the photo); a rename onto it replaces the file.
    @Test(arguments: Kind.allCases)
    func aPlainFileInAllPhotosHoldsItsName(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("All Photos/IMG_1.jpg", Fixture.text)
        try f.fs.put("Smart Albums/Favorites/notes.txt", Fixture.text)
        try f.fs.put("Albums/Trip/IMG_1.jpg", Fixture.photoA)
        try f.fs.put("Albums/Trip/notes.txt", Fixture.text)
        try f.fs.put("Albums/Other/notes.txt", Fixture.photoB)
        #expect(try f.names("All Photos") == ["IMG_1 (2).jpg", "IMG_1.jpg", "P.jpg", "notes.txt"])
        #expect(try f.fs.get("All Photos/IMG_1.jpg") == Fixture.text)
        #expect(try f.fs.get("All Photos/IMG_1 (2).jpg") == Fixture.photoA)
        #expect(try f.names("Smart Albums/Favorites") == ["P.jpg", "notes.txt"])
        try f.fs.rename("All Photos/P.jpg", "All Photos/IMG_1.jpg")
        #expect(try f.names("All Photos") == ["IMG_1 (2).jpg", "IMG_1.jpg", "notes.txt"])
        #expect(try f.fs.get("All Photos/IMG_1.jpg") == Fixture.photoP)
        #expect(try f.fs.stat("All Photos/IMG_1.jpg").ino == f.p)
        // A photo coming back from Recently Deleted to a name a file took meanwhile comes
        // back under the next free one.
        try f.fs.unlink("All Photos/IMG_1 (2).jpg")
        try f.fs.put("All Photos/IMG_1 (2).jpg", Fixture.text)
        try f.fs.rename("Smart Albums/Recently Deleted/IMG_1 (2).jpg", "Albums/Trip/A.jpg")
        #expect(try f.names("All Photos") == ["IMG_1 (2) (2).jpg", "IMG_1 (2).jpg", "IMG_1.jpg", "notes.txt"])
        #expect(try f.fs.get("All Photos/IMG_1 (2).jpg") == Fixture.text)
        #expect(try f.fs.get("All Photos/IMG_1 (2) (2).jpg") == Fixture.photoA)
        #expect(try f.fs.get("Albums/Trip/A.jpg") == Fixture.photoA)
    }

    /// Out of Recently Deleted into a date view: only into the photo's own day, where it
    /// then shows (a review found a move to `By Date/P.jpg` returning 0 and the photo
    /// nowhere there).
    @Test(arguments: Kind.allCases)
    func aPhotoIsRestoredIntoItsOwnDayOnly(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.unlink("All Photos/P.jpg")
        for target in ["By Date/P.jpg", "By Date/2008/P.jpg", "By Date/2008/2008-10/P.jpg"] {
            #expect(f.fs.errno { try f.fs.rename("Smart Albums/Recently Deleted/P.jpg", target) } == EPERM, "\(target)")
        }
        #expect(try f.names("Smart Albums/Recently Deleted") == ["P.jpg"])
        try f.fs.rename("Smart Albums/Recently Deleted/P.jpg", Self.day + "/P.jpg")
        #expect(try f.names(Self.day) == ["P.jpg"])
        try f.expectPKept()
    }

    @Test(arguments: Kind.allCases)
    func cpIntoFavoritesImportsAndMarks(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Smart Albums/Favorites/A.jpg", Fixture.photoA)
        #expect(try f.fs.getxattr("All Photos/A.jpg", "user.albumfs.favorite") == "1")
        #expect(try f.names("Smart Albums/Favorites") == ["A.jpg", "P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func cpIntoHiddenImportsAndHides(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Smart Albums/Hidden/A.jpg", Fixture.photoA)
        #expect(try f.names("Smart Albums/Hidden") == ["A.jpg"])
        #expect(try f.names("All Photos") == ["P.jpg"], "hidden photos show only in Hidden")
        #expect(try f.assetCount() == 2)
    }

    @Test(arguments: Kind.allCases)
    func cpIntoViewsIsEPERM(_ kind: Kind) throws {
        let f = try Fixture(kind)
        for folder in [Self.day, "Smart Albums/Recently Deleted", "Smart Albums/Videos", "Smart Albums/Recently Added"] {
            #expect(f.fs.errno { try f.fs.put(folder + "/A.jpg", Fixture.photoA) } == EPERM, "\(folder)")
        }
        #expect(try f.assetCount() == 1)
    }

    @Test(arguments: Kind.allCases)
    func aPhotoAtTheTopOfAlbumsStaysAPlainFile(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/A.jpg", Fixture.photoA)
        #expect(try f.names("Albums") == ["A.jpg", "Other", "Trip"])
        #expect(try f.fs.get("Albums/A.jpg") == Fixture.photoA)
        #expect(try f.names("All Photos") == ["P.jpg"])
        // Moved into an album, it is a photo there.
        try f.fs.rename("Albums/A.jpg", "Albums/Trip/A.jpg")
        #expect(try f.names("All Photos") == ["A.jpg", "P.jpg"])
    }

    // MARK: ln

    @Test(arguments: Kind.allCases)
    func lnIntoAnAlbumAddsTheSamePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/New")
        try f.fs.link("Albums/Trip/P.jpg", "Albums/New/Q.jpg")
        let q = try f.fs.stat("Albums/New/Q.jpg")
        #expect(q.ino == f.p)
        #expect(q.nlink == 3)
        #expect(try f.assetCount() == 1)
    }

    @Test(arguments: Kind.allCases)
    func lnIntoAllPhotosChangesNothing(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.link("Albums/Trip/P.jpg", "All Photos/X.jpg")
        #expect(try f.names("All Photos") == ["P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func lnIntoFavoritesAndHiddenMarks(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.put("Albums/Trip/A.jpg", Fixture.photoA)
        try f.fs.link("Albums/Trip/A.jpg", "Smart Albums/Favorites/A.jpg")
        #expect(try f.fs.getxattr("Albums/Trip/A.jpg", "user.albumfs.favorite") == "1")
        try f.fs.link("Albums/Trip/A.jpg", "Smart Albums/Hidden/A.jpg")
        #expect(try f.names("Smart Albums/Hidden") == ["A.jpg"])
        #expect(try f.names("All Photos") == ["P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func lnIntoViewsIsEPERM(_ kind: Kind) throws {
        let f = try Fixture(kind)
        for folder in [Self.day, "Smart Albums/Recently Deleted", "Smart Albums/Videos"] {
            #expect(f.fs.errno { try f.fs.link("Albums/Trip/P.jpg", folder + "/X.jpg") } == EPERM, "\(folder)")
        }
    }

    /// A photo moved into Favorites or Hidden under another name is there under that name:
    /// those views show a photo by its name, so it is renamed (a review found the move
    /// answering 0 and the name missing). Under its entry's name, it keeps its own.
    @Test(arguments: Kind.allCases)
    func mvIntoFavoritesOrHiddenUnderANewNameRenamesThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.rename("Albums/Trip/P.jpg", "Smart Albums/Favorites/Q.jpg")
        #expect(try f.names("Smart Albums/Favorites") == ["Q.jpg"])
        #expect(try f.names("All Photos") == ["Q.jpg"])
        #expect(try f.names("Albums/Trip") == [])
        #expect(try f.fs.stat("Smart Albums/Favorites/Q.jpg").ino == f.p)
        try f.fs.rename("All Photos/Q.jpg", "Smart Albums/Hidden/R.jpg")
        #expect(try f.names("Smart Albums/Hidden") == ["R.jpg"])
        #expect(try f.names("All Photos") == [])
        try f.fs.rename("Smart Albums/Hidden/R.jpg", "All Photos/R.jpg")
        try f.fs.rename("Albums/Other/P.jpg", "Smart Albums/Hidden/P.jpg")
        #expect(try f.names("Smart Albums/Hidden") == ["R.jpg"], "under the entry's own name: the photo's name stays")
    }

    /// A hidden photo linked anywhere but Hidden would show nowhere: EPERM, and nothing
    /// changes (a review found `ln` answering 0 and no name appearing).
    @Test(arguments: Kind.allCases)
    func lnOfAHiddenPhotoIsEPERM(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/New")
        try f.fs.rename("All Photos/P.jpg", "Smart Albums/Hidden/P.jpg")
        for target in ["Albums/New/P.jpg", "Albums/New/Q.jpg", "All Photos/P.jpg", "Smart Albums/Favorites/P.jpg"] {
            #expect(f.fs.errno { try f.fs.link("Smart Albums/Hidden/P.jpg", target) } == EPERM, "\(target)")
        }
        #expect(try f.names("Albums/New") == [])
        #expect(try f.names("Smart Albums/Hidden") == ["P.jpg"])
    }

    // MARK: rm

    /// A made thumbnail is removed from an album's .thumbnails/ (for the mount's life: `tar
    /// x` removes what is in its way; ThumbnailTests), never from a view's, which is
    /// read-only (a review found `rm` there answering 0).
    @Test(arguments: Kind.allCases)
    func rmOfAThumbnailIsEPERMInViews(_ kind: Kind) throws {
        let f = try Fixture(kind)
        for view in ["All Photos", Self.day, "Smart Albums/Favorites"] {
            #expect(f.fs.errno { try f.fs.unlink(view + "/.thumbnails/P.jpg.jpg") } == EPERM, "\(view)")
            #expect(f.fs.exists(view + "/.thumbnails/P.jpg.jpg"), "\(view)")
        }
    }

    @Test(arguments: Kind.allCases)
    func rmInAnAlbumKeepsThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.unlink("Albums/Other/P.jpg")
        #expect(try f.names("Albums/Other") == [])
        #expect(try f.names("All Photos") == ["P.jpg"])
        #expect(try f.fs.stat("Albums/Trip/P.jpg").nlink == 1)
    }

    @Test(arguments: Kind.allCases)
    func rmInAllPhotosTrashesAndMvBackRestoresWithItsAlbums(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.unlink("All Photos/P.jpg")
        #expect(try f.names("Smart Albums/Recently Deleted") == ["P.jpg"])
        #expect(try f.names("All Photos") == [])
        #expect(try f.names("Albums/Trip") == [], "a deleted photo shows only in Recently Deleted")
        // Renamed inside Recently Deleted, it stays there.
        try f.fs.rename("Smart Albums/Recently Deleted/P.jpg", "Smart Albums/Recently Deleted/Q.jpg")
        #expect(try f.names("Smart Albums/Recently Deleted") == ["Q.jpg"])
        #expect(try f.names("All Photos") == [])
        #expect(try f.names("Albums/Trip") == [])
        try f.fs.rename("Smart Albums/Recently Deleted/Q.jpg", "All Photos/P.jpg")
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
        #expect(try f.names("Albums/Other") == ["P.jpg"])
        #expect(try f.fs.stat("Albums/Trip/P.jpg").ino == f.p)
    }

    @Test(arguments: Kind.allCases)
    func rmInADateViewTrashes(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.unlink(Self.day + "/P.jpg")
        #expect(try f.names("Smart Albums/Recently Deleted") == ["P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func rmInFavoritesAndHiddenUnmarks(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.unlink("Smart Albums/Favorites/P.jpg")
        #expect(try f.fs.getxattr("Albums/Trip/P.jpg", "user.albumfs.favorite") == "0")
        #expect(try f.names("Albums/Trip") == ["P.jpg"])
        try f.fs.setxattr("Albums/Trip/P.jpg", "user.albumfs.hidden", "1")
        #expect(try f.names("All Photos") == [])
        try f.fs.unlink("Smart Albums/Hidden/P.jpg")
        #expect(try f.names("All Photos") == ["P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func rmInRecentlyDeletedDeletesForGood(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.unlink("All Photos/P.jpg")
        try f.fs.unlink("Smart Albums/Recently Deleted/P.jpg")
        #expect(try f.assetCount() == 0)
        #expect(try f.names("Albums/Trip") == [])
        #expect(try f.names("Smart Albums/Recently Deleted") == [])
    }

    @Test(arguments: Kind.allCases)
    func rmInOtherSmartAlbumsIsEPERM(_ kind: Kind) throws {
        let f = try Fixture(kind)
        #expect(f.fs.errno { try f.fs.unlink("Smart Albums/Recently Added/P.jpg") } == EPERM)
        #expect(try f.names("All Photos") == ["P.jpg"])
    }

    // MARK: mv a file out

    @Test(arguments: Kind.allCases)
    func mvBetweenAlbumsMovesTheMembership(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/New")
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/New/Q.jpg")
        #expect(try f.names("Albums/Trip") == [])
        #expect(try f.fs.stat("Albums/New/Q.jpg").ino == f.p)
        #expect(try f.names("All Photos") == ["P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func mvInsideAnAlbumRenamesTheEntryOnly(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.rename("Albums/Trip/P.jpg", "Albums/Trip/R.jpg")
        #expect(try f.names("Albums/Trip") == ["R.jpg"])
        #expect(try f.names("Albums/Other") == ["P.jpg"])
        #expect(try f.names("All Photos") == ["P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func mvInAllPhotosRenamesThePhoto(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.rename("All Photos/P.jpg", "All Photos/R.jpg")
        #expect(try f.names("All Photos") == ["R.jpg"])
        #expect(try f.names("Albums/Trip") == ["P.jpg"], "album entries keep their names")
    }

    @Test(arguments: Kind.allCases)
    func mvOutOfADateViewIsEPERM(_ kind: Kind) throws {
        let f = try Fixture(kind)
        #expect(f.fs.errno { try f.fs.rename(Self.day + "/P.jpg", "Albums/Other/Z.jpg") } == EPERM)
        // Nor to a hidden name or over another photo, in the view or out of it (a review
        // found these taken as a save: the photo trashed, or saved over the other), nor
        // out of a read-only smart album; and nothing changed.
        try f.fs.put("Albums/Trip/A.jpg", Fixture.photoA)
        for (from, to) in [(Self.day + "/P.jpg", Self.day + "/.P.jpg"), (Self.day + "/P.jpg", Self.day + "/A.jpg"),
                           (Self.day + "/P.jpg", "Albums/Trip/A.jpg"), ("Smart Albums/Recently Added/P.jpg", "Albums/Trip/A.jpg"),
                           ("Smart Albums/Recently Added/P.jpg", "Smart Albums/Recently Added/.P.jpg")] {
            #expect(f.fs.errno { try f.fs.rename(from, to) } == EPERM, "\(from) to \(to)")
        }
        #expect(try f.fs.get("Albums/Trip/A.jpg") == Fixture.photoA)
        #expect(try f.versions() == 1)
        #expect(try f.names("All Photos") == ["A.jpg", "P.jpg"])
        #expect(try f.names(Self.day) == ["A.jpg", "P.jpg"])
    }

    @Test(arguments: Kind.allCases)
    func mvOutOfFavoritesAndHiddenUnmarksAndAdds(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/New")
        try f.fs.rename("Smart Albums/Favorites/P.jpg", "Albums/New/P.jpg")
        #expect(try f.fs.getxattr("Albums/New/P.jpg", "user.albumfs.favorite") == "0")
        try f.fs.setxattr("Albums/New/P.jpg", "user.albumfs.hidden", "1")
        try f.fs.mkdir("Albums/Shown")
        try f.fs.rename("Smart Albums/Hidden/P.jpg", "Albums/Shown/P.jpg")
        #expect(try f.names("All Photos") == ["P.jpg"])
        #expect(try f.names("Albums/Shown") == ["P.jpg"])
    }

    // MARK: folders

    @Test(arguments: Kind.allCases)
    func mkdirMakesAlbumsOnlyInAlbums(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.mkdir("Albums/Trip/Day 1")
        #expect(try f.names("Albums/Trip") == ["Day 1", "P.jpg"])
        for folder in ["All Photos", Self.day, "Smart Albums/Favorites", "Smart Albums/Hidden", "Smart Albums/Recently Deleted", ""] {
            #expect(f.fs.errno { try f.fs.mkdir(folder.isEmpty ? "New" : folder + "/New") } == EPERM, "\(folder)")
        }
    }

    @Test(arguments: Kind.allCases)
    func rmdirDeletesEmptyAlbumsOnly(_ kind: Kind) throws {
        let f = try Fixture(kind)
        #expect(f.fs.errno { try f.fs.rmdir("Albums/Trip") } == ENOTEMPTY)
        try f.fs.mkdir("Albums/Empty")
        try f.fs.rmdir("Albums/Empty")
        #expect(try f.names("Albums") == ["Other", "Trip"])
        for folder in ["All Photos", "Smart Albums/Favorites", "By Date"] {
            #expect(f.fs.errno { try f.fs.rmdir(folder) } == EPERM, "\(folder)")
        }
    }

    /// An album whose photos all went to Recently Deleted or were hidden lists nothing,
    /// and goes as an empty folder goes (`rm -r`, a Samba client deleting it); a photo
    /// restored or shown again afterwards comes back to its other albums only, and the
    /// sidecar that went to Recently Deleted with it comes back to the folder above.
    @Test(arguments: Kind.allCases)
    func anAlbumThatListsNothingCanBeRemoved(_ kind: Kind) throws {
        let f = try Fixture(kind)
        let sidecar = Array("<x:xmpmeta/>\n".utf8)
        try f.fs.mkdir("Albums/Gone")
        try f.fs.put("Albums/Gone/A.jpg", Fixture.photoA)
        try f.fs.put("Albums/Gone/A.xmp", sidecar)
        try f.fs.put("Albums/Gone/B.jpg", Fixture.photoB)
        try f.fs.link("Albums/Gone/B.jpg", "Albums/Other/B.jpg")
        try f.fs.unlink("All Photos/A.jpg")
        try f.fs.setxattr("Albums/Gone/B.jpg", "user.albumfs.hidden", "1")
        #expect(try f.names("Albums/Gone") == [])
        let hiddenB = try f.fs.stat("Smart Albums/Hidden/B.jpg")
        try f.fs.rmdir("Albums/Gone")
        #expect(try f.names("Albums") == ["Other", "Trip"])
        #expect(try f.fs.stat("Smart Albums/Hidden/B.jpg").nlink == hiddenB.nlink - 1, "B is in one album fewer")
        try f.fs.rename("Smart Albums/Recently Deleted/A.jpg", "All Photos/A.jpg")
        try f.fs.setxattr("Smart Albums/Hidden/B.jpg", "user.albumfs.hidden", "0")
        #expect(try f.names("All Photos").contains("A.jpg"))
        #expect(try f.names("Albums/Other") == ["B.jpg", "P.jpg"])
        #expect(try f.names("Albums") == ["A.xmp", "Other", "Trip"])
        #expect(try f.fs.get("Albums/A.xmp") == sidecar)
        #expect(try f.assetCount() == 3)
        // A folder that shows something is still not empty.
        try f.fs.mkdir("Albums/Kept")
        try f.fs.link("All Photos/A.jpg", "Albums/Kept/A.jpg")
        try f.fs.link("All Photos/B.jpg", "Albums/Kept/B.jpg")
        try f.fs.unlink("All Photos/A.jpg")
        #expect(f.fs.errno { try f.fs.rmdir("Albums/Kept") } == ENOTEMPTY)
    }

    /// An album's mtime is the last change of its listing, whatever made it: its photo
    /// sent to Recently Deleted from All Photos, brought back, hidden. A photo's ctime
    /// moves with its attributes and its links: a caption, a rating, `ln`.
    @Test(arguments: Kind.allCases)
    func timesFollowChangesMadeElsewhere(_ kind: Kind) throws {
        let f = try Fixture(kind)
        var mtime = try f.fs.stat("Albums/Trip").mtimeNs
        let changes: [(String, () throws -> Void)] = [
            ("rm in All Photos", { try f.fs.unlink("All Photos/P.jpg") }),
            ("restored", { try f.fs.rename("Smart Albums/Recently Deleted/P.jpg", "All Photos/P.jpg") }),
            ("hidden", { try f.fs.setxattr("All Photos/P.jpg", "user.albumfs.hidden", "1") }),
            ("shown", { try f.fs.setxattr("Smart Albums/Hidden/P.jpg", "user.albumfs.hidden", "0") }),
        ]
        for (what, change) in changes {
            usleep(20_000)
            try change()
            let now = try f.fs.stat("Albums/Trip").mtimeNs
            #expect(now > mtime, "\(what)")
            mtime = now
        }
        var ctime = try f.fs.stat("Albums/Trip/P.jpg").ctimeNs
        let attributeChanges: [(String, () throws -> Void)] = [
            ("caption", { try f.fs.setxattr("Albums/Trip/P.jpg", "user.xdg.comment", "Rome") }),
            ("rating", { try f.fs.setxattr("Albums/Trip/P.jpg", "user.albumfs.rating", "4") }),
            ("ln", { try f.fs.mkdir("Albums/New"); try f.fs.link("Albums/Trip/P.jpg", "Albums/New/P.jpg") }),
            ("rm of a link", { try f.fs.unlink("Albums/New/P.jpg") }),
        ]
        for (what, change) in attributeChanges {
            usleep(20_000)
            try change()
            let now = try f.fs.stat("Albums/Trip/P.jpg").ctimeNs
            #expect(now > ctime, "\(what)")
            ctime = now
        }
    }

    @Test(arguments: Kind.allCases)
    func mvOfAnAlbumRenamesOrMovesIt(_ kind: Kind) throws {
        let f = try Fixture(kind)
        try f.fs.rename("Albums/Trip", "Albums/Rome")
        try f.fs.rename("Albums/Other", "Albums/Rome/Other")
        #expect(try f.names("Albums") == ["Rome"])
        #expect(try f.names("Albums/Rome") == ["Other", "P.jpg"])
        #expect(f.fs.errno { try f.fs.rename("Albums/Rome", "Albums/Rome/Other/Loop") } == EINVAL)
        #expect(f.fs.errno { try f.fs.rename("Albums/Rome", "All Photos/Rome") } == EPERM)
    }

    // MARK: write into an existing photo

    @Test(arguments: Kind.allCases)
    func writingIntoAPhotoAnywhereIsItsNextVersion(_ kind: Kind) throws {
        let f = try Fixture(kind)
        var expected = 1
        for path in ["Albums/Trip/P.jpg", "All Photos/P.jpg", Self.day + "/P.jpg", "Smart Albums/Favorites/P.jpg"] {
            let bytes = Fixture.photoP.tagged(path)
            try f.fs.put(path, bytes)
            expected += 1
            #expect(try f.versions() == expected, "\(path)")
            #expect(try f.fs.get("Albums/Other/P.jpg") == bytes, "the new version shows everywhere")
        }
        try f.expectPKept()
        try f.fs.unlink("All Photos/P.jpg")
        #expect(f.fs.errno { try f.fs.put("Smart Albums/Recently Deleted/P.jpg", Fixture.photoA) } == EPERM)
    }
}
