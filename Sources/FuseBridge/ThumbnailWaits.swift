import CFuse
import Foundation

/// Requests that may wait for a thumbnail to be made (a stat or an open of one, a lookup
/// in a `.thumbnails/` or `.sh_thumbnails/` folder: `FileSystem.mayWaitForThumbnail`)
/// run on these threads, not on libfuse's worker threads, which libfuse keeps few of: so
/// that any number of programs may wait for thumbnails at once (`ls -l .thumbnails`
/// in sixteen processes) while every other request is answered. libfuse lets any thread
/// reply to a request. Requests beyond the threads wait in line here, holding nothing.
final class ThumbnailWaits: @unchecked Sendable {
    private let condition = NSCondition()
    private var work: [@Sendable () -> Void] = []
    /// Threads still serving; `stop` waits for none to be left.
    private var serving: Int
    private var stopping = false

    init(threads: Int) {
        serving = threads
        for index in 0..<threads {
            let thread = Thread { [unowned self] in self.serve() }
            thread.name = "albumfs.thumbnail-wait.\(index)"
            thread.start()
        }
    }

    func run(_ body: @escaping @Sendable () -> Void) {
        condition.lock()
        work.append(body)
        condition.signal()
        condition.unlock()
    }

    /// Answers what is in line and ends the threads, returning when the last is done:
    /// the session they reply on must outlive every reply (the mount destroys it next).
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while serving > 0 { condition.wait() }
        condition.unlock()
    }

    private func serve() {
        while true {
            condition.lock()
            while work.isEmpty && !stopping { condition.wait() }
            guard !work.isEmpty else {
                serving -= 1
                condition.broadcast()
                condition.unlock()
                return
            }
            let body = work.removeFirst()
            condition.unlock()
            body()
        }
    }
}

/// A request, and what libfuse handed with it, carried to another thread to be answered
/// there (libfuse replies from any thread; the file info is a copy, its own is on the
/// caller's stack).
struct HandedOver: @unchecked Sendable {
    let req: fuse_req_t?
    var info = fuse_file_info()
}
