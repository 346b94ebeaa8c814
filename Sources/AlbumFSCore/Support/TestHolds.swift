import AlbumCore
import Foundation
import Glibc

/// Test hooks, each off unless the daemon's environment names a folder for it: a
/// request about the inode whose number `DIR/hold` holds is held at one point until the
/// test creates `DIR/release-N` (N counts the holds from 1; `DIR/held-N` appears when
/// one is held). A test thus lands a change exactly where otherwise only a loaded
/// machine's scheduling puts it.
///
/// - `ALBUMFS_TEST_HOLD_LISTINGS`: the first page of a listing of that folder, read and
///   not yet answered (`ListingCacheTests`).
/// - `ALBUMFS_TEST_HOLD_SAVES`: a save of that photo, committed, before the kernel is
///   told to drop the photo's attributes (the first time only; `PassthroughTests`).
/// - `ALBUMFS_TEST_HOLD_RELEASES`: the last release of a writer of that file (`FileSystem.release`),
///   counted, before it saves or drops what no handle holds any more (the first time only;
///   `PassthroughTests`).
public struct TestHold: Sendable {
    public static let listings = TestHold("ALBUMFS_TEST_HOLD_LISTINGS")
    public static let saves = TestHold("ALBUMFS_TEST_HOLD_SAVES", limit: 1)
    public static let releases = TestHold("ALBUMFS_TEST_HOLD_RELEASES", limit: 1)

    private let folder: String?
    private let limit: Int
    private let held = Locked(0)

    private init(_ variable: String, limit: Int = .max) {
        folder = ProcessInfo.processInfo.environment[variable]
        self.limit = limit
    }

    /// Holds the calling request if the test asks for `ino`.
    public func holdIfAsked(_ ino: UInt64) {
        guard let folder,
              let asked = try? String(contentsOfFile: folder + "/hold", encoding: .utf8),
              UInt64(asked.trimmingCharacters(in: .whitespacesAndNewlines)) == ino else { return }
        let n = held.withLock { count -> Int in
            guard count < limit else { return 0 }
            count += 1
            return count
        }
        guard n > 0 else { return }
        FileManager.default.createFile(atPath: "\(folder)/held-\(n)", contents: nil)
        // At most 30 s: a test that failed before releasing it leaves no request hanging.
        var waited = 0
        while access("\(folder)/release-\(n)", F_OK) != 0 && waited < 30_000 {
            usleep(1000)
            waited += 1
        }
    }
}
