import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// The photo tools that edit in place (issue 11), run for real on a real mount, each next
/// to the same tool on a plain directory: after every tool the album folder equals the
/// plain folder (names and bytes), and the photo (a favorite with a caption, in two
/// albums) is the same photo: same inode right after the tool exits, same favorite,
/// caption and albums, the edit in both albums, one more version, no other asset in All
/// Photos, and the capture date of the new bytes.
final class EditingToolTests: MountTestCase {
    override var folderPrefix: String { "albumfs-editing" }
    var plain: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        for tool in ["/usr/bin/exiftool", "/usr/bin/mogrify", "/usr/bin/convert"] {
            XCTAssertTrue(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run mount-scripts/test, which installs it")
        }
        try mountLibrary()
        plain = temp.sub("plain")
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        let source = Samples.directory + "/photos/jpg/gps/DSCN0010.jpg"
        try sh("mkdir Albums/Trip Albums/Other && cp \(q(source)) Albums/Trip/P.jpg && chmod 644 Albums/Trip/P.jpg && ln Albums/Trip/P.jpg Albums/Other/P.jpg")
        try sh("setfattr -n user.albumfs.favorite -v 1 Albums/Trip/P.jpg && setfattr -n user.xdg.comment -v 'A caption' Albums/Trip/P.jpg")
        try Processes.shell("cp \(q(source)) \(q(plain))/P.jpg && chmod 644 \(q(plain))/P.jpg")
    }

    /// Runs `command` in the album folder and in the plain folder, then checks everything
    /// a user would.
    func edit(_ label: String, _ command: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let album = m + "/Albums/Trip"
        let inode = try sh("stat -c %i P.jpg", in: album).stdout
        let versions = try library().versions(of: Int64(inode.trimmingCharacters(in: .whitespacesAndNewlines))!).count
        // The tool, then stat at once (the inode a program sees right after the save).
        let after = try sh("\(command) && stat -c %i P.jpg", in: album).stdout
        try sh(command, in: plain)
        XCTAssertEqual(after, inode, "\(label): the photo keeps its inode", file: file, line: line)

        let differences = Trees.differences(try Trees.snapshot(album), try Trees.snapshot(plain), names: ("the album", "the plain folder"))
        XCTAssertEqual(differences, [], "\(label): the album folder equals the plain one", file: file, line: line)
        try sh("cmp Albums/Trip/P.jpg Albums/Other/P.jpg && cmp Albums/Trip/P.jpg \(q(plain))/P.jpg")
        XCTAssertEqual(try sh("getfattr --only-values -n user.albumfs.favorite Albums/Other/P.jpg").stdout, "1", label, file: file, line: line)
        XCTAssertEqual(try sh("getfattr --only-values -n user.xdg.comment Albums/Other/P.jpg").stdout, "A caption", label, file: file, line: line)
        XCTAssertEqual(try sh("ls 'All Photos'").stdout, "P.jpg\n", "\(label): no other asset", file: file, line: line)
        let id = Int64(inode.trimmingCharacters(in: .whitespacesAndNewlines))!
        XCTAssertEqual(try library().versions(of: id).count, versions + 1, "\(label): one more version", file: file, line: line)
        XCTAssertEqual(Set(try library().memberships(ofAsset: id).map(\.name)), ["P.jpg"], label, file: file, line: line)
        XCTAssertEqual(try library().memberships(ofAsset: id).count, 2, "\(label): in both albums", file: file, line: line)
        // The capture date is what exiftool reads from the new bytes.
        let exif = try Processes.run("/usr/bin/exiftool", ["-s3", "-d", "%Y-%m-%dT%H:%M:%S", "-DateTimeOriginal", plain + "/P.jpg"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let ours = try sh("getfattr --only-values -n user.albumfs.capture_date Albums/Trip/P.jpg").stdout
        XCTAssertTrue(!exif.isEmpty && ours.hasPrefix(exif), "\(label): capture date \(ours), exiftool says \(exif)", file: file, line: line)
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0, label, file: file, line: line)
    }

    func testSavesOfEveryToolKeepThePhoto() throws {
        try edit("exiftool -overwrite_original (tags)", "/usr/bin/exiftool -q -overwrite_original -Keywords+=holiday -XMP-xmp:Rating=4 P.jpg")
        // What the tool wrote is read from the new version, in both albums.
        XCTAssertEqual(try sh("getfattr --only-values -n user.xdg.tags Albums/Other/P.jpg").stdout, "holiday")
        XCTAssertEqual(try sh("getfattr --only-values -n user.albumfs.rating Albums/Trip/P.jpg").stdout, "4")
        // A rating the bytes carry is theirs: its removal (rsync -X from a folder without
        // it) is accepted and changes nothing.
        try sh("setfattr -x user.albumfs.rating Albums/Trip/P.jpg")
        XCTAssertEqual(try sh("getfattr --only-values -n user.albumfs.rating Albums/Trip/P.jpg").stdout, "4")
        try edit("exiftool -overwrite_original (date)", "/usr/bin/exiftool -q -overwrite_original -DateTimeOriginal='2011:11:11 11:11:11' P.jpg")
        XCTAssertTrue(try sh("ls 'By Date/2011/2011-11/2011-11-11'").stdout.contains("P.jpg"), "By Date follows the new date")
        try edit("exiftool keeping _original", "/usr/bin/exiftool -q -Keywords+=second P.jpg")
        XCTAssertTrue(FileManager.default.fileExists(atPath: m + "/Albums/Trip/P.jpg_original"))
        // A temporary file written, copied into P.jpg, removed: no photo is left of it.
        try edit("exiftool -overwrite_original_in_place", "/usr/bin/exiftool -q -overwrite_original_in_place -Keywords+=inplace P.jpg")
        try edit("mogrify in place", "/usr/bin/mogrify -resize 50% P.jpg")
        try edit("convert P.jpg P.jpg", "/usr/bin/convert P.jpg -resize 80% P.jpg")
        let python = """
            import os, tempfile
            data = open('P.jpg', 'rb').read()
            data = data[:2] + b'\\xff\\xfe\\x00\\x08python' + data[2:]
            fd, tmp = tempfile.mkstemp(dir='.')
            assert '.' not in os.path.basename(tmp)
            with os.fdopen(fd, 'wb') as f:
                f.write(data)
            os.replace(tmp, 'P.jpg')
            """
        try edit("Python mkstemp and os.replace", "python3 -c \(q(python)) && chmod 644 P.jpg")
        XCTAssertFalse(mount.log.contains("warning"), mount.log)
    }

    /// The same tools run in Favorites and in Hidden, where the photo shows by its name:
    /// it keeps its inode, its mark, its albums and gains one version; no other asset is
    /// left (a review found each exiftool save leaving its temporary file as a photo in All
    /// Photos, and mogrify unmarking the photo and leaving its backup as one).
    func testSavesInFavoritesAndHiddenKeepThePhoto() throws {
        let id = Int64(try sh("stat -c %i Albums/Trip/P.jpg").stdout.trimmingCharacters(in: .whitespacesAndNewlines))!
        func check(_ label: String, in view: String, mark: String, versions: Int) throws {
            XCTAssertEqual(try sh("ls -A \(q(view))").stdout, "P.jpg\n", label)
            XCTAssertEqual(try sh("stat -c %i \(q(view))/P.jpg").stdout.trimmingCharacters(in: .whitespacesAndNewlines), String(id), label)
            XCTAssertEqual(try sh("getfattr --only-values -n user.albumfs.\(mark) \(q(view))/P.jpg").stdout, "1", label)
            XCTAssertEqual(try library().stats().assets, 1, "\(label): no other asset")
            XCTAssertEqual(try library().versions(of: id).count, versions, "\(label): one more version")
            XCTAssertEqual(try library().memberships(ofAsset: id).count, 2, "\(label): in both albums")
        }
        var versions = 1
        for (view, mark) in [("Smart Albums/Favorites", "favorite"), ("Smart Albums/Hidden", "hidden")] {
            if mark == "hidden" { try sh("setfattr -n user.albumfs.hidden -v 1 Albums/Trip/P.jpg") }
            try sh("/usr/bin/exiftool -q -overwrite_original -Keywords+=\(mark) P.jpg", in: m + "/" + view)
            versions += 1
            try check("exiftool in \(view)", in: view, mark: mark, versions: versions)
            XCTAssertEqual(try sh("getfattr --only-values -n user.xdg.tags \(q(view))/P.jpg").stdout.split(separator: ",").last.map(String.init), mark)
            try sh("/usr/bin/mogrify -resize 90% P.jpg", in: m + "/" + view)
            versions += 1
            try check("mogrify in \(view)", in: view, mark: mark, versions: versions)
            // exiftool keeping its backup: the backup is there, beside the photo.
            try sh("/usr/bin/exiftool -q -Keywords+=kept P.jpg", in: m + "/" + view)
            versions += 1
            XCTAssertEqual(try sh("ls -A \(q(view))").stdout, "P.jpg\nP.jpg_original\n", "exiftool's backup in \(view)")
            try sh("rm \(q(view))/P.jpg_original")
            try check("exiftool keeping _original in \(view)", in: view, mark: mark, versions: versions)
        }
        XCTAssertEqual(try sh("ls 'All Photos'").stdout, "", "hidden: in no view but Hidden")
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)
    }

    func testConvertToANewFileAddsOneAssetAndLeavesThePhoto() throws {
        let before = try sh("sha256sum Albums/Trip/P.jpg").stdout
        try sh("/usr/bin/convert P.jpg -resize 50% small.jpg", in: m + "/Albums/Trip")
        try sh("/usr/bin/convert P.jpg -resize 50% small.jpg", in: plain)
        XCTAssertEqual(Trees.differences(try Trees.snapshot(m + "/Albums/Trip"), try Trees.snapshot(plain)), [])
        XCTAssertEqual(try sh("sha256sum Albums/Trip/P.jpg").stdout, before)
        XCTAssertEqual(try sh("ls 'All Photos'").stdout, "P.jpg\nsmall.jpg\n")
        XCTAssertEqual(try library().stats().assets, 2)
        XCTAssertEqual(try library().versions(of: Int64(try sh("stat -c %i Albums/Trip/P.jpg").stdout.trimmingCharacters(in: .whitespacesAndNewlines))!).count, 1)
    }

    func testEditingACopyLeavesTheOriginal() throws {
        let before = try sh("sha256sum Albums/Trip/P.jpg").stdout
        let inode = try sh("stat -c %i Albums/Trip/P.jpg").stdout
        try sh("cp P.jpg P-copy.jpg && /usr/bin/exiftool -q -overwrite_original -Keywords+=copy P-copy.jpg", in: m + "/Albums/Trip")
        try sh("cp P.jpg P-copy.jpg && /usr/bin/exiftool -q -overwrite_original -Keywords+=copy P-copy.jpg", in: plain)
        XCTAssertEqual(Trees.differences(try Trees.snapshot(m + "/Albums/Trip"), try Trees.snapshot(plain)), [])
        XCTAssertEqual(try sh("sha256sum Albums/Trip/P.jpg").stdout, before, "the original is unchanged")
        XCTAssertEqual(try sh("stat -c %i Albums/Trip/P.jpg").stdout, inode)
        XCTAssertNotEqual(try sh("stat -c %i Albums/Trip/P-copy.jpg").stdout, inode, "the copy is a photo of its own")
        XCTAssertEqual(try sh("ls 'All Photos'").stdout, "P-copy.jpg\nP.jpg\n")
    }

    func testATextFileCopiedInStaysThereAsAPlainFile() throws {
        try sh("cp \(q(Samples.directory))/extras/notes.txt Albums/Trip/")
        try sh("cmp \(q(Samples.directory))/extras/notes.txt Albums/Trip/notes.txt")
        XCTAssertEqual(try sh("ls 'All Photos'").stdout, "P.jpg\n")
        XCTAssertTrue(mount.log.contains("kept notes.txt as a plain file"), mount.log)
    }

    func testImportKeepsTheNamesItWasGivenInsideAlbums() throws {
        mount.unmount()
        let folder = temp.sub("Card")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // The library has a P.jpg already: the album entry keeps its own name all the same.
        try MediaFactory.image(at: folder + "/P.jpg", width: 64, height: 48, exif: ["exif-ifd2-DateTimeOriginal": "2020:01:01 10:00:00"])
        let imported = try Processes.albumfs("import", lib, "--album", "Imports", folder)
        XCTAssertEqual(imported.status, 0, imported.stderr)
        try mount.start()
        XCTAssertEqual(try sh("ls Albums/Imports/Card").stdout, "P.jpg\n")
        XCTAssertEqual(try sh("ls 'All Photos'").stdout, "P (2).jpg\nP.jpg\n", "the library-wide name has the suffix")
    }

    func testVersionsAndRevert() throws {
        try sh("/usr/bin/exiftool -q -overwrite_original -DateTimeOriginal='2011:11:11 11:11:11' Albums/Trip/P.jpg")
        let original = Samples.directory + "/photos/jpg/gps/DSCN0010.jpg"
        mount.unmount()
        let listed = try Processes.albumfs("versions", lib, "Albums/Trip/P.jpg")
        XCTAssertEqual(listed.status, 0, listed.stderr)
        let lines = listed.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, listed.stdout)
        XCTAssertTrue(lines[1].contains("17307b1207eb6487d7908e9d154890b46e3d2e0192369cfd3f4c33d5a5af4035"), listed.stdout)
        XCTAssertTrue(lines[2].hasSuffix("(current)"), listed.stdout)
        let reverted = try Processes.albumfs("revert", lib, "All Photos/P.jpg", "1")
        XCTAssertEqual(reverted.status, 0, reverted.stderr)
        XCTAssertEqual(try Processes.albumfs("versions", lib, "Albums/Other/P.jpg").stdout.split(separator: "\n").count, 4)
        XCTAssertEqual(try Processes.albumfs("revert", lib, "Albums/Trip/P.jpg", "9").status, Int32(66))
        try mount.start()
        try sh("cmp \(q(original)) Albums/Other/P.jpg")
        XCTAssertTrue(try sh("getfattr --only-values -n user.albumfs.capture_date Albums/Trip/P.jpg").stdout.hasPrefix("2008-10-22T16:28:39"),
                      "what the bytes say is read again from the reverted version")
        XCTAssertEqual(try sh("getfattr --only-values -n user.albumfs.favorite Albums/Trip/P.jpg").stdout, "1")
    }

    /// An atomic save whose temporary file holds the bytes of a photo of another album
    /// (that photo, named here by the close), then a `chmod` and a write through the
    /// saved name at once, as Python helpers do: both reach the photo saved, never the
    /// other album's photo. A review found the `chmod` landing on the other photo (the
    /// kernel kept the temporary name's entry, which the rename moved onto the saved
    /// name) in 2 of 4 runs; four rounds here, each a new save.
    func testAChangeRightAfterASaveReachesThePhotoSaved() throws {
        let gps = Samples.directory + "/photos/jpg/gps"
        let script = """
            import os, shutil, sys
            gps, albums = sys.argv[1], sys.argv[2]
            shutil.copyfile(os.path.join(gps, 'DSCN0040.jpg'), os.path.join(albums, 'Other', 'x.jpg'))
            for round in range(4):
                target = os.path.join(albums, 'Trip', 'f%d.jpg' % round)
                shutil.copyfile(os.path.join(gps, 'DSCN0038.jpg'), target)
                temporary = os.path.join(albums, 'Trip', 'tmp%d.jpg' % round)
                shutil.copyfile(os.path.join(gps, 'DSCN0040.jpg'), temporary)
                os.rename(temporary, target)
                os.chmod(target, 0o600)
                with open(target, 'wb') as f:
                    f.write(open(os.path.join(gps, 'DSCN0042.jpg'), 'rb').read())
            """
        let run = try Processes.run("python3", ["-c", script, gps, m + "/Albums"])
        XCTAssertTrue(run.ok, run.stderr)
        XCTAssertEqual(try sh("stat -c %a Albums/Other/x.jpg").stdout, "644\n", "the other album's photo keeps its mode")
        try sh("cmp Albums/Other/x.jpg \(q(gps))/DSCN0040.jpg")
        for round in 0..<4 {
            XCTAssertEqual(try sh("stat -c %a Albums/Trip/f\(round).jpg").stdout, "600\n", "round \(round)")
            try sh("cmp Albums/Trip/f\(round).jpg \(q(gps))/DSCN0042.jpg")
        }
        let x = Int64(try sh("stat -c %i Albums/Other/x.jpg").stdout.trimmingCharacters(in: .whitespacesAndNewlines))!
        XCTAssertEqual(try library().versions(of: x).count, 1, "no version of the other photo")
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)
    }

    static let gps = Samples.directory + "/photos/jpg/gps"
    static let samples = ["DSCN0012.jpg", "DSCN0021.jpg", "DSCN0025.jpg", "DSCN0027.jpg"]

    /// Photos `p0.jpg` ... in Trip and in Other, mode 644, their bytes `samples` in turn.
    func photosInTripAndOther(_ count: Int) throws {
        for round in 0..<count {
            let sample = Self.samples[round % Self.samples.count]
            try sh("cp \(q(Self.gps))/\(sample) Albums/Trip/p\(round).jpg && chmod 644 Albums/Trip/p\(round).jpg && ln Albums/Trip/p\(round).jpg Albums/Other/")
        }
    }

    /// A photo renamed to a hidden name (a backup: that name is a plain file of its own,
    /// and the photo lives on in its other album), then changed through that name at
    /// once: the `chmod`, the attribute and the write reach the hidden file, never the
    /// photo. The kernel would keep the entry the rename moved (standing for the photo)
    /// under the new name until the name's invalidation, which comes after the reply;
    /// the rename has the kernel look every cached name up again before it replies
    /// (`Bridge.expireCachedNames`). Before, the `chmod` changed the photo in about one
    /// round of ten (3 of 30 here); twelve rounds.
    func testAChangeRightAfterARenameReachesTheNameRenamedTo() throws {
        let (gps, samples, rounds) = (Self.gps, Self.samples, 12)
        try photosInTripAndOther(rounds)
        let script = """
            import os, sys
            trip = sys.argv[1]
            for round in range(int(sys.argv[2])):
                hidden = os.path.join(trip, '.p%d.jpg.bak' % round)
                os.rename(os.path.join(trip, 'p%d.jpg' % round), hidden)
                os.chmod(hidden, 0o600)
                os.setxattr(hidden, 'user.note', b'backup')
                with open(hidden, 'ab') as f:
                    f.write(b'tail')
            """
        let run = try Processes.run("python3", ["-c", script, m + "/Albums/Trip", String(rounds)])
        XCTAssertTrue(run.ok, run.stderr)
        for round in 0..<rounds {
            let sample = samples[round % samples.count]
            let photo = "Albums/Other/p\(round).jpg", hidden = "Albums/Trip/.p\(round).jpg.bak"
            XCTAssertEqual(try sh("stat -c %a \(photo) \(hidden)").stdout, "644\n600\n", "round \(round)")
            try sh("cmp \(photo) \(q(gps))/\(sample)")
            XCTAssertEqual(try sh("tail -c 4 \(hidden)").stdout, "tail", "round \(round)")
            XCTAssertEqual(try sh("getfattr --only-values -n user.note \(hidden)").stdout, "backup")
            XCTAssertEqual(try sh("getfattr --only-values -n user.note \(photo)", status: 1).stdout, "", "round \(round)")
        }
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)
    }

    /// A save through a backup name (`mv P.jpg P.jpg~`, the backup read, a temporary
    /// file renamed to `P.jpg`), then the backup changed at once: the `chmod` and the
    /// attribute reach the backup (a plain file now), never the photo, which shows the
    /// new version in its other album. The kernel's entry of the backup's name, made by
    /// the read, stood for the photo until the name's invalidation after the reply; the
    /// landing makes every cached name stale before it (`Invalidation.allNames`). A
    /// review found the `chmod` changing the photo in 12 of 40 rounds; twelve here.
    func testAChangeOfTheBackupRightAfterASaveReachesTheBackup() throws {
        let (gps, samples, rounds) = (Self.gps, Self.samples, 12)
        try photosInTripAndOther(rounds)
        let script = """
            import os, shutil, sys
            trip, gps, samples = sys.argv[1], sys.argv[2], sys.argv[4:]
            for round in range(int(sys.argv[3])):
                photo = os.path.join(trip, 'p%d.jpg' % round)
                backup, temp = photo + '~', os.path.join(trip, '.p%d.jpg.tmp' % round)
                os.rename(photo, backup)
                with open(backup, 'rb') as f:
                    f.read()
                shutil.copyfile(os.path.join(gps, samples[(round + 1) % len(samples)]), temp)
                os.rename(temp, photo)
                os.chmod(backup, 0o600)
                os.setxattr(backup, 'user.note', b'backup')
            """
        let run = try Processes.run("python3", ["-c", script, m + "/Albums/Trip", gps, String(rounds)] + samples)
        XCTAssertTrue(run.ok, run.stderr)
        for round in 0..<rounds {
            let photo = "Albums/Other/p\(round).jpg", backup = "Albums/Trip/p\(round).jpg~"
            XCTAssertEqual(try sh("stat -c %a \(photo) \(backup)").stdout, "644\n600\n", "round \(round)")
            try sh("cmp \(photo) \(q(gps))/\(samples[(round + 1) % samples.count])")
            try sh("cmp \(backup) \(q(gps))/\(samples[round % samples.count])")
            XCTAssertEqual(try sh("getfattr --only-values -n user.note \(backup)").stdout, "backup")
            XCTAssertEqual(try sh("getfattr --only-values -n user.note \(photo)", status: 1).stdout, "", "round \(round)")
        }
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)
    }
}
