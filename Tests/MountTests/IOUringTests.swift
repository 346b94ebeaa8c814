import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// FUSE over io_uring (docs/performance.md, "Requests through io_uring"): when the kernel
/// offers it (Linux 6.14 and later, with the fuse module's `enable_uring`), every request
/// but FORGET and INTERRUPT reaches the daemon through an io_uring queue of its caller's
/// CPU, and the daemon puts it under libfuse itself (Sources/CFuseRing/ring.c). The same
/// tools must then see the same filesystem as through /dev/fuse.
///
/// The kernel's switch is system-wide: these tests turn it on only while their mount
/// answers INIT (the kernel decides there, for the life of the connection) and put it
/// back at once, so that no other mount of the suite is changed by it.
final class IOUringTests: MountTestCase {
    override var folderPrefix: String { "albumfs-io-uring" }

    static let kernelSwitch = "/sys/module/fuse/parameters/enable_uring"

    /// Root on a kernel built with CONFIG_FUSE_IO_URING (its module has the switch).
    var kernelHasIOUring: Bool { getuid() == 0 && FileManager.default.fileExists(atPath: Self.kernelSwitch) }

    /// Mounts with the kernel's switch on, as an administrator who enabled FUSE over
    /// io_uring leaves it; the switch is put back once the mount has answered.
    func mountOffered(options: [String] = []) throws {
        let previous = try? String(contentsOfFile: Self.kernelSwitch, encoding: .utf8)
        if kernelHasIOUring { try "Y".write(toFile: Self.kernelSwitch, atomically: false, encoding: .utf8) }
        defer {
            if kernelHasIOUring, let previous {
                try? previous.trimmingCharacters(in: .whitespacesAndNewlines).write(toFile: Self.kernelSwitch, atomically: false, encoding: .utf8)
            }
        }
        try mountLibrary(options: options)
        // INIT is answered once the mount answers a request.
        try sh("ls -a > /dev/null")
    }

    /// The requests the daemon said it served through io_uring, at its unmount.
    func servedThroughRing() -> Int? {
        let line = mount.log.split(separator: "\n").last { $0.contains("requests were served through io_uring") }
        return line.flatMap { $0.split(separator: " ").compactMap { Int($0) }.first }
    }

    /// Copies, thumbnails (replies that wait for one being made are sent from another
    /// thread), writes of the largest size the kernel sends, listings, and the
    /// plain-directory oracle's random sequences of saves, renames and open handles:
    /// through the ring, all as through /dev/fuse; and the daemon says it served them so.
    func testEveryToolWorksThroughTheRing() throws {
        try mountOffered()
        XCTAssertEqual(mount.log.contains("requests through io_uring"), kernelHasIOUring, mount.log)

        // First, on a library without the samples (the oracle's photos are samples: bytes
        // the library holds are that photo, with its mode).
        for seed in 1...3 {
            let plain = temp.sub("oracle-\(seed)")
            try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
            try sh("mkdir Albums/oracle-\(seed)")
            let run = try Processes.run("python3", [Samples.packageRoot + "/Tests/Clients/plain-oracle.py", plain,
                                                    m + "/Albums/oracle-\(seed)", gps, "\(seed)", "200"])
            XCTAssertTrue(run.ok, "seed \(seed):\n" + run.stdout + run.stderr
                          + "\nthe daemon's log, last lines:\n" + mount.log.split(separator: "\n").suffix(40).joined(separator: "\n"))
        }
        try sh("cp -r \(q(Samples.directory + "/photos")) Albums/")
        XCTAssertEqual(Trees.differences(try Trees.snapshot(m + "/Albums/photos"), try Trees.snapshot(Samples.directory + "/photos"),
                                         names: ("the album", "the source")), [])
        // At once, while they are being made: each a JPEG.
        let thumbnails = try sh("""
            for f in Albums/photos/jpg/gps/.thumbnails/*; do head -c 2 "$f" | od -An -tx1; done | sort | uniq -c
            """).stdout
        XCTAssertEqual(thumbnails.trimmingCharacters(in: .whitespaces), "9  ff d8\n", thumbnails)

        // Writes and reads of the most the kernel puts in one request (1 MiB).
        let big = temp.sub("big.bin")
        try Processes.shell("head -c 5000000 /dev/urandom > \(q(big))")
        try sh("dd if=\(q(big)) of=Albums/big.bin bs=4M status=none && cmp \(q(big)) Albums/big.bin")
        try sh("dd if=Albums/big.bin bs=4M iflag=direct status=none | cmp \(q(big)) -")

        let photos = try library().stats().assets
        XCTAssertEqual(try sh("ls -l 'All Photos' | grep -c '^-'").stdout, "\(photos)\n")
        XCTAssertEqual(try sh("find 'All Photos' -type f | wc -l").stdout, "\(photos)\n")
        mount.mayHoldAtEnd = [lib + "/staging/version-", lib + "/originals/"]
        mount.unmount()
        let served = servedThroughRing()
        if kernelHasIOUring {
            XCTAssertGreaterThan(served ?? 0, 1000, mount.log)
        } else {
            XCTAssertNil(served, mount.log)
        }
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
    }

    /// `-o noio_uring` keeps /dev/fuse even when the kernel offers io_uring.
    func testNoIOUringServesThroughTheDevice() throws {
        try mountOffered(options: ["noio_uring"])
        XCTAssertFalse(mount.log.contains("io_uring"), mount.log)
        try sh("mkdir Albums/Trip && cp \(q(gps))/DSCN0010.jpg Albums/Trip/ && cmp \(q(gps))/DSCN0010.jpg 'All Photos/DSCN0010.jpg'")
        mount.unmount()
        XCTAssertNil(servedThroughRing(), mount.log)
    }
}
