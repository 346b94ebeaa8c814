import AlbumCore
import Foundation
import TestSupport
import XCTest

/// The library's own log file (used when no syslog daemon listens) stays small: past its
/// limit it starts again, the full one kept as `.1`.
final class LogTests: XCTestCase {
    func testTheLibraryLogRotates() throws {
        let temp = TempDirectory()
        defer { temp.remove() }
        let path = temp.sub("albumfs.log")
        try Data(repeating: 0x61, count: 100).write(to: URL(fileURLWithPath: path))
        let destination = try Log.openRotating(path, limit: 64)
        Log.configure(destination: destination, minimum: .info)
        defer { Log.configure(destination: .stderr, minimum: .info) }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path + ".1")).count, 100, "the full log kept as .1")
        // Past the limit while running: checked every 256 lines.
        for i in 0..<300 { Log.info("line \(i)") }
        let current = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertFalse(current.contains("line 0\n"), "started again once full")
        XCTAssertTrue(current.contains("line 299"))
        XCTAssertTrue(try String(contentsOfFile: path + ".1", encoding: .utf8).contains("line 255"))
    }
}
