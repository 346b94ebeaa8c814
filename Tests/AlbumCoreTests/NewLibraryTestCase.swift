import AlbumCore
import TestSupport
import XCTest

/// A test on a new, empty SQLite library of its own, in a temporary folder that is
/// removed afterwards.
class NewLibraryTestCase: XCTestCase {
    var temp: TempDirectory!
    var library: Library!

    override func setUpWithError() throws {
        temp = TempDirectory()
        library = try Library.create(at: temp.sub("lib"))
    }

    override func tearDown() {
        library = nil
        temp.remove()
    }
}
