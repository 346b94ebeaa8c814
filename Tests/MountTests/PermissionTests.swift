import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Who may do what (issue 8), checked with a second, unprivileged user (nobody, through
/// setpriv): without allow_other nobody gets in; with allow_other and
/// default_permissions the modes, owners and umask hold; -o ro refuses every change.
final class PermissionTests: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!
    var lib: String!
    let gps = Samples.directory + "/photos/jpg/gps"

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-perm")
        // nobody must be able to reach the mountpoint's folder.
        chmod(temp.path, 0o755)
        lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        XCTAssertTrue(try Processes.albumfs("import", lib, "--album", "A", gps + "/DSCN0010.jpg").ok)
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        temp?.remove()
    }

    /// A command as nobody (uid and gid 65534, no groups).
    func asNobody(_ command: String) throws -> Processes.Result {
        try Processes.run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", command])
    }

    /// A photo made private keeps its thumbnails private too: a thumbnail is readable by
    /// whom the photo is (a review found every thumbnail 0444, so another user got a
    /// 256-pixel copy of a `chmod 600` photo).
    func testThumbnailsOfAPrivatePhotoArePrivate() throws {
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other", "umask=022"])
        let m = mount.mountpoint
        let thumbnail = "\(m)/Albums/A/.thumbnails/DSCN0010.jpg.jpg"
        let shared = "\(m)/Albums/A/.sh_thumbnails/large"
        XCTAssertTrue(try asNobody("cat \(q(thumbnail)) > /dev/null && cat \(q(shared))/*.png > /dev/null").ok, "readable while the photo is")
        XCTAssertTrue(try Processes.shell("chmod 600 \(q(m))/Albums/A/DSCN0010.jpg").ok)
        XCTAssertEqual(try Processes.shell("stat -c %a \(q(thumbnail)) \(q(shared))/*.png").stdout, "400\n400\n")
        for path in [thumbnail, "\(m)/All Photos/.thumbnails/DSCN0010.jpg.jpg"] {
            XCTAssertTrue(try asNobody("cat \(q(path)) 2>&1 >/dev/null").stdout.contains("Permission denied"), path)
        }
        XCTAssertTrue(try asNobody("cat \(q(shared))/*.png 2>&1 >/dev/null").stdout.contains("Permission denied"))
        XCTAssertTrue(try Processes.shell("chmod 644 \(q(m))/Albums/A/DSCN0010.jpg").ok)
        XCTAssertTrue(try asNobody("cat \(q(thumbnail)) > /dev/null").ok, "readable again with the photo")
    }

    /// One owner per mount: a chown (what `cp -a`, `rsync -a` and `tar x` do as root) is
    /// accepted so that those copies work, changes nothing, and the log says so once (a
    /// review found it silent).
    func testChownIsAcceptedNotKeptAndSaidOnce() throws {
        mount = try MountedLibrary(library: lib, temp: temp)
        let m = mount.mountpoint
        let owner = try Processes.shell("stat -c %u:%g \(q(m))/Albums/A/DSCN0010.jpg").stdout
        XCTAssertTrue(try Processes.shell("chown 1000:1000 \(q(m))/Albums/A/DSCN0010.jpg && chown 1000 \(q(m))/Albums/A").ok)
        XCTAssertEqual(try Processes.shell("stat -c %u:%g \(q(m))/Albums/A/DSCN0010.jpg").stdout, owner)
        XCTAssertTrue(try Processes.shell("rsync -a \(q(gps))/DSCN0012.jpg \(q(m))/Albums/A/ && chown -R 1000 \(q(m))/Albums/A").ok)
        XCTAssertEqual(mount.log.components(separatedBy: "chown is accepted and not kept").count, 2, mount.log)
    }

    func testWithoutAllowOtherNobodyElseGetsIn() throws {
        mount = try MountedLibrary(library: lib, temp: temp)
        let result = try asNobody("ls \(q(mount.mountpoint)) 2>&1")
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stdout.contains("Permission denied"), result.stdout)
    }

    /// mkdir keeps a private mode it was asked for (the caller's umask applied), as a
    /// plain directory does: `mktemp -d`, Python's `mkdtemp` and rsync's partial folder
    /// are private (a review found them 0755), and a `chmod` after still changes it.
    /// Under `allow_other`, nobody else gets in. (A usual 0755 takes the mount's
    /// default: `testWithUmask002TheMountsGroupMayAddPhotos`.)
    func testAFolderIsMadeWithTheModeAskedFor() throws {
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other", "umask=022"])
        let m = mount.mountpoint, a = q(mount.path("Albums/A"))
        let plain = temp.sub("plain")
        XCTAssertEqual(mkdir(plain, 0o755), 0)
        for root in [a, q(plain)] {
            let made = try Processes.shell("""
                cd \(root) && (umask 077; mkdir u) && mkdir p && python3 -c "import os; os.mkdir('o', 0o700)" && \
                stat -c '%n %a' u p o && stat -c %a "$(mktemp -d -p .)" && chmod 751 o && stat -c %a o
                """)
            XCTAssertEqual(made.stdout, "u 700\np 755\no 700\n700\n751\n", "\(root): \(made.stderr)")
        }
        XCTAssertTrue(try asNobody("ls \(a)/u 2>&1").stdout.contains("Permission denied"))
        XCTAssertTrue(try asNobody("ls \(a)/p").ok)
        mount.unmount()
        // Kept across a remount.
        mount = try MountedLibrary(library: lib, temp: temp)
        XCTAssertEqual(try Processes.shell("stat -c %a \(q(m))/Albums/A/u \(q(m))/Albums/A/o").stdout, "700\n751\n")
    }

    /// With allow_other the modes are always enforced (default_permissions whether asked
    /// for or not), set-id bits never honoured, and by default only the owner and the group
    /// get in (umask 027).
    func testAllowOtherAlwaysEnforcesTheModes() throws {
        // allow_other alone: nobody is not the owner nor in the group.
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other"])
        let m = mount.mountpoint
        XCTAssertTrue(try asNobody("ls \(q(m))/Albums 2>&1").stdout.contains("Permission denied"), "umask 027 by default")
        XCTAssertEqual(try Processes.shell("stat -c %a \(q(m))/Albums/A/DSCN0010.jpg \(q(m))/Albums/A").stdout, "640\n750\n")
        // Set-id bits are never kept.
        XCTAssertTrue(try Processes.shell("chmod 4755 \(q(m))/Albums/A/DSCN0010.jpg").ok)
        XCTAssertEqual(try Processes.shell("stat -c %a \(q(m))/Albums/A/DSCN0010.jpg").stdout, "750\n")
        XCTAssertTrue(try Processes.shell("chmod 644 \(q(m))/Albums/A/DSCN0010.jpg").ok)
        mount.unmount()

        // umask=022 given: nobody reads, and changes nothing, though default_permissions
        // was not asked for: not trash, not purge, not an album, not an attribute.
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other", "umask=022"])
        XCTAssertTrue(try asNobody("cat \(q(m))/Albums/A/DSCN0010.jpg > /dev/null").ok)
        for command in [
            "cp \(q(gps))/DSCN0012.jpg \(q(m))/Albums/A/", "rm -f \(q(m))/Albums/A/DSCN0010.jpg",
            "rm -f '\(m)/All Photos/DSCN0010.jpg'", "mkdir \(q(m))/Albums/B",
            "setfattr -n user.xdg.comment -v x \(q(m))/Albums/A/DSCN0010.jpg",
        ] {
            XCTAssertTrue(try asNobody("\(command) 2>&1").stdout.contains("Permission denied"), command)
        }
        XCTAssertTrue(try Processes.shell("rm '\(m)/All Photos/DSCN0010.jpg'").ok, "the owner may")
        XCTAssertTrue(try asNobody("rm -f '\(m)/Smart Albums/Recently Deleted/DSCN0010.jpg' 2>&1").stdout.contains("Permission denied"),
                      "nobody cannot purge")
        XCTAssertTrue(try Processes.shell("mv '\(m)/Smart Albums/Recently Deleted/DSCN0010.jpg' '\(m)/All Photos/'").ok)
        mount.unmount()

        // Owned by nobody (uid=, gid=): nobody may change things.
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other", "uid=65534", "gid=65534"])
        let copy = try asNobody("cp \(q(gps))/DSCN0012.jpg \(q(m))/Albums/A/ && mkdir \(q(m))/Albums/B && echo ok")
        XCTAssertEqual(copy.stdout, "ok\n", copy.stderr)
        XCTAssertEqual(try Processes.shell("stat -c '%u %g' \(q(m))/Albums/A/DSCN0012.jpg").stdout, "65534 65534\n")
        mount.unmount()

        // umask=077: others see nothing; the owner does.
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other", "default_permissions", "umask=077"])
        XCTAssertTrue(try asNobody("ls \(q(m))/Albums 2>&1").stdout.contains("Permission denied"))
        XCTAssertTrue(try Processes.shell("ls \(q(m))/Albums").ok, "the owner still does")
        mount.unmount()

        // suid and dev (what fstab's `defaults` passes) are overruled: nosuid,nodev always.
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other", "suid", "dev"])
        let line = try String(contentsOfFile: "/proc/self/mounts", encoding: .utf8).split(separator: "\n").first { $0.contains(" \(m) ") }
        let flags = try XCTUnwrap(line).split(separator: " ")[3].split(separator: ",")
        XCTAssertTrue(flags.contains("nosuid") && flags.contains("nodev"), "\(flags)")
        mount.unmount()
    }

    /// The desktop trash under allow_other (PRODUCT.md section 6): a user of the mount's
    /// group who is not its owner trashes a photo as a file manager does (their own
    /// `.Trash-UID` at the top of the mount, a `.trashinfo`, the photo moved into
    /// `files/`): it goes to Recently Deleted, and moved back it returns to its album.
    func testAnotherUsersDesktopTrashSendsPhotosToRecentlyDeletedAndBack() throws {
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other", "gid=65534", "umask=002"])
        let m = mount.mountpoint
        func asMember(_ command: String) throws -> Processes.Result {
            try Processes.run("setpriv", ["--reuid=1000", "--regid=65534", "--clear-groups", "/bin/sh", "-c", "cd \(q(m)) && \(command)"])
        }
        let trashed = try asMember("""
            mkdir -p .Trash-1000/files .Trash-1000/info \
            && printf '[Trash Info]\\nPath=Albums/A/DSCN0010.jpg\\nDeletionDate=2026-12-04T17:00:00\\n' > .Trash-1000/info/DSCN0010.jpg.trashinfo \
            && mv Albums/A/DSCN0010.jpg .Trash-1000/files/ && ls .Trash-1000/files
            """)
        XCTAssertEqual(trashed.stdout, "DSCN0010.jpg\n", trashed.stderr)
        XCTAssertEqual(try Processes.shell("stat -c '%u %a' \(q(m))/.Trash-1000").stdout, "1000 700\n")
        XCTAssertEqual(try Processes.shell("ls \(q(m))/Albums/A \(q(m))/'Smart Albums/Recently Deleted'").stdout,
                       "\(m)/Albums/A:\n\n\(m)/Smart Albums/Recently Deleted:\nDSCN0010.jpg\n")
        // Someone else cannot look into that user's trash.
        XCTAssertTrue(try asNobody("ls \(q(m))/.Trash-1000 2>&1").stdout.contains("Permission denied"))
        let restored = try asMember("mv .Trash-1000/files/DSCN0010.jpg Albums/A/ && rm .Trash-1000/info/DSCN0010.jpg.trashinfo && echo ok")
        XCTAssertEqual(restored.stdout, "ok\n", restored.stderr)
        XCTAssertEqual(try Processes.shell("ls \(q(m))/Albums/A \(q(m))/'Smart Albums/Recently Deleted'").stdout,
                       "\(m)/Albums/A:\nDSCN0010.jpg\n\n\(m)/Smart Albums/Recently Deleted:\n")
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    /// `umask=` works as the shell's umask does: with umask=002 the mount's group (a
    /// Samba or NFS service user in it) may make albums and add photos, everyone else
    /// may not; `chmod` of a folder that is not an album is kept, across a remount.
    func testWithUmask002TheMountsGroupMayAddPhotos() throws {
        func run(uid: Int, gid: Int, _ command: String) throws -> Processes.Result {
            try Processes.run("setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "/bin/sh", "-c", command])
        }
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other", "gid=65534", "umask=002"])
        let m = mount.mountpoint
        XCTAssertEqual(try Processes.shell("stat -c %a \(q(m))/Albums \(q(m))/Albums/A '\(m)/All Photos' \(q(m))/Albums/A/DSCN0010.jpg").stdout,
                       "775\n775\n775\n664\n")
        let member = try run(uid: 1000, gid: 65534, "mkdir \(q(m))/Albums/B && cp \(q(gps))/DSCN0012.jpg \(q(m))/Albums/B/ && cp \(q(gps))/DSCN0021.jpg '\(m)/All Photos/' && echo ok")
        XCTAssertEqual(member.stdout, "ok\n", member.stderr)
        XCTAssertEqual(try Processes.shell("ls '\(m)/All Photos'").stdout, "DSCN0010.jpg\nDSCN0012.jpg\nDSCN0021.jpg\n")
        XCTAssertTrue(try run(uid: 1000, gid: 1000, "mkdir \(q(m))/Albums/C 2>&1").stdout.contains("Permission denied"), "not in the group")
        // The owner takes the group's right away again on Albums/ alone: kept.
        XCTAssertTrue(try Processes.shell("chmod 755 \(q(m))/Albums").ok)
        mount.unmount()
        try mount.start()
        XCTAssertEqual(try Processes.shell("stat -c %a \(q(m))/Albums \(q(m))/Albums/B").stdout, "755\n775\n")
        XCTAssertTrue(try run(uid: 1000, gid: 65534, "mkdir \(q(m))/Albums/D 2>&1").stdout.contains("Permission denied"))
        XCTAssertTrue(try run(uid: 1000, gid: 65534, "mkdir \(q(m))/Albums/B/D && echo ok").ok, "B stays the group's")
    }

    func testReadOnlyRefusesEveryChange() throws {
        mount = try MountedLibrary(library: lib, temp: temp, options: ["ro"])
        let m = mount.mountpoint
        let commands = [
            "cp \(q(gps))/DSCN0012.jpg \(q(m))/Albums/A/", "mkdir \(q(m))/Albums/B", "rm \(q(m))/Albums/A/DSCN0010.jpg",
            "mv \(q(m))/Albums/A/DSCN0010.jpg \(q(m))/Albums/A/x.jpg", "ln \(q(m))/Albums/A/DSCN0010.jpg \(q(m))/Albums/A/y.jpg",
            "touch \(q(m))/Albums/A/DSCN0010.jpg", "setfattr -n user.albumfs.favorite -v 1 \(q(m))/Albums/A/DSCN0010.jpg",
            "rmdir \(q(m))/Albums/A", "sh -c 'echo x >> \(m)/Albums/A/DSCN0010.jpg'", "touch \(q(m))/Albums/A/.DS_Store",
        ]
        for command in commands {
            let result = try Processes.shell("\(command) 2>&1")
            XCTAssertNotEqual(result.status, 0, command)
            XCTAssertTrue(result.stdout.contains("Read-only file system"), "\(command): \(result.stdout)")
        }
        XCTAssertTrue(try Processes.shell("cmp \(q(gps))/DSCN0010.jpg \(q(m))/Albums/A/DSCN0010.jpg").ok)
    }

    func testTheLibraryIsPrivate() throws {
        mount = try MountedLibrary(library: lib, temp: temp)
        XCTAssertTrue(try Processes.shell("cp \(q(gps))/DSCN0021.jpg \(q(mount.path("Albums/A")))/ && printf x > \(q(mount.path("Albums/A/.DS_Store"))) && ls \(q(mount.path("Albums/A/.thumbnails"))) > /dev/null").ok)
        let modes = try Processes.shell("cd \(q(lib)) && find . -printf '%m %y %p\\n'").stdout.split(separator: "\n")
        for line in modes {
            let fields = line.split(separator: " ", maxSplits: 2)
            let mode = Int(fields[0], radix: 8)!, kind = fields[1], path = fields[2]
            XCTAssertEqual(mode & 0o077, 0, "\(path) is open to others: \(fields[0])")
            if kind == "d" { XCTAssertEqual(mode, 0o700, String(path)) }
        }
        XCTAssertTrue(try asNobody("ls \(q(lib)) 2>&1").stdout.contains("Permission denied"))
    }
}
