import XCTest
final class MountTestsPlaceholder: XCTestCase { func testNothing() {} }
