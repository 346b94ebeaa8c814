import AlbumCore
import Foundation
import Glibc

/// A test hook, off unless the daemon's environment names a folder
/// (`ALBUMFS_TEST_HOLD_LISTINGS=DIR`): the first page of a listing of the folder whose
/// inode number `DIR/hold` holds is read, then held before its reply until the test
/// creates `DIR/release-N` (N counts the held pages from 1; `DIR/held-N` appears when
/// one is held). A test thus lands a change between a page's read and the kernel taking
/// it in, which otherwise only a loaded machine's scheduling does
/// (`ListingCacheTests`).
enum ListingHold {
    private static let folder = ProcessInfo.processInfo.environment["ALBUMFS_TEST_HOLD_LISTINGS"]
    private static let held = Locked(0)

    static func holdIfAsked(_ ino: UInt64, offset: Int64) {
        guard let folder, offset == 0,
              let asked = try? String(contentsOfFile: folder + "/hold", encoding: .utf8),
              UInt64(asked.trimmingCharacters(in: .whitespacesAndNewlines)) == ino else { return }
        let n = held.withLock { count -> Int in
            count += 1
            return count
        }
        FileManager.default.createFile(atPath: "\(folder)/held-\(n)", contents: nil)
        // At most 30 s: a test that failed before releasing it leaves no request hanging.
        var waited = 0
        while access("\(folder)/release-\(n)", F_OK) != 0 && waited < 30_000 {
            usleep(1000)
            waited += 1
        }
    }
}
