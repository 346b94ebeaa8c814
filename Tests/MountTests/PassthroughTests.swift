import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// With `-o passthrough` (and by default on read-only mounts) photos opened to be read
/// are read by the kernel from their blob (FUSE passthrough). The kernel keeps an inode
/// open in one mode only, so a photo open for reading this way cannot be replaced until
/// it is closed: ETXTBSY, and a log line.
final class PassthroughTests: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!
    var lib: String!
    let gps = Samples.directory + "/photos/jpg/gps"

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-passthrough")
        lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        XCTAssertTrue(try Processes.albumfs("import", lib, "--album", "A", gps + "/DSCN0010.jpg").ok)
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        temp?.remove()
    }

    /// Runs `command` in the mountpoint; it must succeed.
    func sh(_ command: String) throws {
        let result = try Processes.shell("cd \(mount.mountpoint.shellQuoted) && \(command)")
        XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)\nlog: \(mount.log)")
    }

    /// Root on a kernel built with CONFIG_FUSE_PASSTHROUGH (6.9 and later).
    var kernelOffersPassthrough: Bool {
        guard getuid() == 0 else { return false }
        if FileManager.default.fileExists(atPath: "/proc/config.gz") {
            let config = try? Processes.shell("zcat /proc/config.gz | grep -q '^CONFIG_FUSE_PASSTHROUGH=y'")
            return config?.status == 0
        }
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        return parts.count == 2 && (parts[0], parts[1]) >= (6, 9)
    }

    func testAPhotoOpenForReadingIsReplacedOnlyOnceClosed() throws {
        mount = try MountedLibrary(library: lib, temp: temp, options: ["passthrough"])
        let passthrough = kernelOffersPassthrough
        XCTAssertEqual(mount.log.contains("reads in passthrough"), passthrough, mount.log)
        let v1 = (gps + "/DSCN0010.jpg").shellQuoted, v2 = (gps + "/DSCN0025.jpg").shellQuoted, v3 = (gps + "/DSCN0027.jpg").shellQuoted
        try sh("cp \(v3) Albums/A/.IMG.swp")
        // Fd 3 holds the photo open; other readers share it, by any path.
        let busy = passthrough ? "! " : ""
        try sh("""
            set -e
            exec 3< Albums/A/DSCN0010.jpg
            cmp \(v1) Albums/A/DSCN0010.jpg
            cmp \(v1) 'All Photos/DSCN0010.jpg'
            \(busy)cat \(v2) > Albums/A/DSCN0010.jpg
            \(busy)mv Albums/A/.IMG.swp Albums/A/DSCN0010.jpg
            \(passthrough ? "cmp \(v1) - <&3" : "true")
            \(passthrough ? "cmp \(v1) Albums/A/DSCN0010.jpg" : "true")
            """)
        if passthrough {
            XCTAssertTrue(mount.log.contains("DSCN0010.jpg is open for reading (passthrough); it can be replaced once it is closed"), mount.log)
            // Closed: replaced as always, a new version each time, read in passthrough again.
            try sh("cat \(v2) > Albums/A/DSCN0010.jpg && cmp \(v2) Albums/A/DSCN0010.jpg")
            try sh("mv Albums/A/.IMG.swp Albums/A/DSCN0010.jpg && cmp \(v3) Albums/A/DSCN0010.jpg")
        }
        try sh("cmp \(v3) 'All Photos/DSCN0010.jpg'")
        // Readers in parallel, of the photo and of its thumbnail.
        try sh("""
            pids=""
            for i in 1 2 3 4; do
                (for n in 1 2 3 4 5; do cmp \(v3) Albums/A/DSCN0010.jpg && cat Albums/A/.thumbnails/DSCN0010.jpg.jpg > /dev/null || exit 1; done) &
                pids="$pids $!"
            done
            for p in $pids; do wait $p || exit 1; done
            """)
        let library = try Library.open(at: lib, access: .reader)
        let asset = try XCTUnwrap(try library.asset(named: "DSCN0010.jpg"))
        XCTAssertEqual(try library.versions(of: asset.id).count, 3)
        mount.unmount()
        let result = try Processes.albumfs("check", lib)
        XCTAssertEqual(result.status, 0, result.stdout)
    }

    func testReadOnlyMountsReadInPassthroughAndReadWriteOnesDoNot() throws {
        mount = try MountedLibrary(library: lib, temp: temp, options: ["ro"])
        XCTAssertEqual(mount.log.contains("reads in passthrough"), kernelOffersPassthrough, mount.log)
        try sh("cmp \(gps.shellQuoted)/DSCN0010.jpg Albums/A/DSCN0010.jpg")
        mount.unmount()
        mount = try MountedLibrary(library: lib, temp: temp, name: "mnt2")
        XCTAssertFalse(mount.log.contains("reads in passthrough"), mount.log)
        try sh("exec 3< Albums/A/DSCN0010.jpg && cat \(gps.shellQuoted)/DSCN0025.jpg > Albums/A/DSCN0010.jpg && cmp \(gps.shellQuoted)/DSCN0025.jpg Albums/A/DSCN0010.jpg")
    }
}
