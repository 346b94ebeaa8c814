import AlbumCore
import Foundation
import TestSupport
import XCTest

/// The desktop trash (freedesktop.org trash specification, docs/desktop-trash.md): `gio
/// trash` (what GNOME, Xfce and LXDE file managers call "Move to Trash") sends photos to
/// Recently Deleted through `.Trash-UID` at the top of the mount, and a file manager's
/// restore (moving the file back to its `Path=`, or `gio trash --restore` through gvfs)
/// brings them back to their albums.
final class DesktopTrashTests: MountTestCase {
    override var folderPrefix: String { "albumfs-desktop-trash" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        for tool in ["/usr/bin/gio", "/usr/bin/dbus-run-session", "/usr/libexec/gvfsd-trash"] {
            XCTAssertTrue(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run mount-scripts/test, which installs it")
        }
        try mountLibrary()
        try sh("mkdir Albums/A Albums/B && cp \(q(gps))/DSCN0010.jpg Albums/A/P.jpg && cp \(q(gps))/DSCN0012.jpg Albums/B/P.jpg")
    }

    /// gio in a session bus of its own (gvfs's trash backend lives there).
    @discardableResult
    func gio(_ arguments: String, status: Int32 = 0) throws -> Processes.Result {
        // dbus-daemon's own complaints (no fd limit to raise here) are left out.
        try sh("out=$(dbus-run-session -- gio \(arguments) 2>&1); rc=$?; printf '%s\\n' \"$out\" | grep -v -e 'fd limit' -e 'dbus-daemon' -e 'connection to the bus'; exit $rc",
               status: status)
    }

    /// `gio trash --restore` of the trashed file whose original path ends in `suffix`.
    func restoreWithGio(_ suffix: String) throws {
        let listed = try gio("trash --list").stdout.split(separator: "\n").first { $0.hasSuffix(suffix) }
        let uri = try XCTUnwrap(listed.map { String($0.split(separator: "\t")[0]) }, "\(suffix) is not in the trash")
        try gio("trash --restore '\(uri)'")
    }

    func testTwoPhotosOfOneNameTrashedFromTwoAlbumsAndRestored() throws {
        let uid = getuid()
        try sh("gio trash Albums/A/P.jpg && gio trash Albums/B/P.jpg")
        // In between: in Recently Deleted, out of their albums and All Photos; the trash
        // as the specification lays it out, a second name chosen by gio for the clash.
        XCTAssertEqual(try sh("ls Albums/A Albums/B 'All Photos'").stdout, "Albums/A:\n\nAlbums/B:\n\nAll Photos:\n")
        XCTAssertEqual(try sh("ls 'Smart Albums/Recently Deleted'").stdout, "P (2).jpg\nP.jpg\n")
        XCTAssertEqual(try sh("ls .Trash-\(uid)/files .Trash-\(uid)/info").stdout,
                       ".Trash-\(uid)/files:\nP.2.jpg\nP.jpg\n\n.Trash-\(uid)/info:\nP.2.jpg.trashinfo\nP.jpg.trashinfo\n")
        XCTAssertTrue(try sh("cat .Trash-\(uid)/info/P.jpg.trashinfo").stdout.contains("Path=Albums/A/P.jpg"))
        XCTAssertEqual(try sh("stat -c '%u %a' .Trash-\(uid)").stdout, "\(uid) 700\n")
        try sh("cmp .Trash-\(uid)/files/P.jpg \(q(gps))/DSCN0010.jpg")
        XCTAssertTrue(try gio("trash --list").stdout.contains("\(m)/Albums/B/P.jpg"))

        // Restored as a file manager does: moved back to its Path, its info removed.
        try sh("mv .Trash-\(uid)/files/P.jpg Albums/A/P.jpg && rm .Trash-\(uid)/info/P.jpg.trashinfo")
        // And by gio through gvfs.
        try restoreWithGio("/Albums/B/P.jpg")
        try sh("cmp Albums/A/P.jpg \(q(gps))/DSCN0010.jpg && cmp Albums/B/P.jpg \(q(gps))/DSCN0012.jpg")
        XCTAssertEqual(try sh("ls 'Smart Albums/Recently Deleted' .Trash-\(uid)/files").stdout,
                       ".Trash-\(uid)/files:\n\nSmart Albums/Recently Deleted:\n")
        XCTAssertEqual(try sh("ls 'All Photos'").stdout, "P (2).jpg\nP.jpg\n")
        XCTAssertEqual(try library().stats().assets, 2)
    }

    /// Moved to the trash from a date folder, where `rm` sends a photo to Recently
    /// Deleted too, and restored there by gio, also when it was the day's only photo (its
    /// date folders stay reachable by path while it is in Recently Deleted). From a
    /// read-only view, where `rm` is refused, the trash is refused too (a review found
    /// both: the restore refused, the trash from Recently Added let through).
    func testTrashedFromADateFolderAndRestoredThere() throws {
        let uid = getuid()
        // B's photo (the same day) deleted for good: A's is the day's only photo.
        try sh("rm 'All Photos/P (2).jpg' && rm 'Smart Albums/Recently Deleted/P (2).jpg'")
        let day = "By Date/2008/2008-10/2008-10-22"
        XCTAssertEqual(try sh("ls \(q(day))").stdout, "P.jpg\n")
        try gio("trash \(q(day))/P.jpg")
        XCTAssertEqual(try sh("ls Albums/A 'All Photos' 'By Date'").stdout, "Albums/A:\n\nAll Photos:\n\nBy Date:\n", "the day is not listed")
        XCTAssertTrue(try sh("cat .Trash-\(uid)/info/P.jpg.trashinfo").stdout.contains("Path=By%20Date/2008/2008-10/2008-10-22/P.jpg"))
        try restoreWithGio("/\(day)/P.jpg")
        try sh("cmp \(q(day))/P.jpg \(q(gps))/DSCN0010.jpg && cmp Albums/A/P.jpg \(q(gps))/DSCN0010.jpg")
        XCTAssertEqual(try sh("ls 'Smart Albums/Recently Deleted' .Trash-\(uid)/files").stdout,
                       ".Trash-\(uid)/files:\n\nSmart Albums/Recently Deleted:\n")
        XCTAssertEqual(try library().stats().assets, 1)

        // From a read-only view: refused, as rm is there, and nothing moved.
        let refused = try sh("mv 'Smart Albums/Recently Added/P.jpg' .Trash-\(uid)/files/P.jpg 2>&1", status: 1).stdout
        XCTAssertTrue(refused.contains("Operation not permitted"), refused)
        XCTAssertEqual(try sh("ls .Trash-\(uid)/files 'Smart Albums/Recently Deleted'").stdout,
                       ".Trash-\(uid)/files:\n\nSmart Albums/Recently Deleted:\n")
        try sh("cmp Albums/A/P.jpg \(q(gps))/DSCN0010.jpg")
    }

    func testAlbumsAreRefusedPlainFilesComeBackAndEmptyingDeletesForGood() throws {
        let uid = getuid()
        // An album does not go to the trash: a clear refusal, nothing moved.
        let refused = try sh("gio trash Albums/B 2>&1", status: 1)
        XCTAssertFalse(refused.stdout.isEmpty)
        XCTAssertTrue(mount.log.contains("albums do not go to the trash"), mount.log)
        try sh("test -f Albums/B/P.jpg")
        // A plain file goes and comes back as it was.
        try sh("printf 'notes' > Albums/A/notes.txt && gio trash Albums/A/notes.txt && test ! -e Albums/A/notes.txt")
        try sh("mv .Trash-\(uid)/files/notes.txt Albums/A/ && rm .Trash-\(uid)/info/notes.txt.trashinfo")
        XCTAssertEqual(try sh("cat Albums/A/notes.txt").stdout, "notes")
        // Emptying the trash deletes for good.
        try sh("gio trash Albums/B/P.jpg")
        try gio("trash --empty")
        XCTAssertEqual(try sh("ls 'Smart Albums/Recently Deleted' .Trash-\(uid)/files").stdout,
                       ".Trash-\(uid)/files:\n\nSmart Albums/Recently Deleted:\n")
        XCTAssertEqual(try library().stats().assets, 1)
    }
}
