import AlbumCore
import Foundation
import TestSupport
import XCTest

/// What most mount tests share: a fresh library in a temporary folder, a mount of it
/// (started by `mountLibrary`, stopped pass or fail), and shell commands run in the
/// mountpoint.
class MountTestCase: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!
    var lib: String!
    let gps = Samples.directory + "/photos/jpg/gps"

    /// The prefix of this test's temporary folder (its name in `ps` and `/proc/mounts`).
    var folderPrefix: String { "albumfs-test" }

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory(folderPrefix)
        lib = temp.sub("lib")
        let created = try Processes.albumfs("init", lib)
        XCTAssertTrue(created.ok, created.stderr)
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        temp?.remove()
    }

    func mountLibrary(options: [String] = [], environment: [String: String] = [:]) throws {
        mount = try MountedLibrary(library: lib, temp: temp, options: options, environment: environment)
    }

    var m: String { mount.mountpoint }

    /// Runs `command` in the mountpoint (or `folder`) and checks its exit status.
    @discardableResult
    func sh(_ command: String, status: Int32 = 0, in folder: String? = nil,
            file: StaticString = #filePath, line: UInt = #line) throws -> Processes.Result {
        let result = try Processes.shell("cd \(q(folder ?? m)) && \(command)")
        XCTAssertEqual(result.status, status, "\(command): \(result.stderr)", file: file, line: line)
        return result
    }

    func library() throws -> Library { try Library.open(at: lib, access: .reader) }
}
