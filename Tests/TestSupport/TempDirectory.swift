import Foundation
import Glibc

/// A private temporary directory, removed when the test is done with it.
public final class TempDirectory: @unchecked Sendable {
    public let path: String

    public init(_ label: String = "albumfs-test") {
        var base = NSTemporaryDirectory()
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array("\(base)/\(label)-XXXXXX".utf8CString)
        let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(result != nil, "mkdtemp failed")
        path = String(cString: result!)
    }

    public func sub(_ name: String) -> String { path + "/" + name }

    /// Removes it; returns why it could not, if it could not (a test that checks its
    /// library is gone says that).
    @discardableResult
    public func remove() -> String? {
        // Blobs are read-only; make everything writable so that removal cannot fail.
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        if let walker = FileManager.default.enumerator(atPath: path) {
            for case let item as String in walker {
                chmod(path + "/" + item, 0o700)
            }
        }
        do {
            try FileManager.default.removeItem(atPath: path)
            return nil
        } catch {
            return "\(error)"
        }
    }

    deinit { remove() }
}
