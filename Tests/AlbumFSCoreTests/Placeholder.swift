import XCTest
final class AlbumFSCoreTestsPlaceholder: XCTestCase { func testNothing() {} }
