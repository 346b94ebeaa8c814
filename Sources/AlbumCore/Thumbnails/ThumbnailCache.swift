import Foundation
import Glibc

/// A cached thumbnail JPEG.
public struct Thumbnail: Sendable, Equatable {
    public let path: String
    public let size: Int64
    public let mtimeNs: Int64
}

/// The thumbnails of a library, keyed by content: `thumbnails/<size>/ab/<sha256>.jpg`,
/// shared by every folder and name that shows the same bytes. A file that cannot be
/// decoded gets `<sha256>.failed` (its reason) instead, and is not tried again; both can
/// be deleted at any time and are made again.
public final class ThumbnailCache: Sendable {
    public let paths: LibraryPaths
    let maker: any ThumbnailMaking
    /// Keys being made now, so that two requests for one thumbnail make it once.
    private let inFlight = Locked<[String: NSCondition]>([:])

    public init(paths: LibraryPaths, maker: any ThumbnailMaking) {
        self.paths = paths
        self.maker = maker
    }

    func directory(size: Int, sha256: String) -> String { "\(paths.thumbnails)/\(size)/\(sha256.prefix(2))" }
    public func path(sha256: String, size: Int) -> String { "\(directory(size: size, sha256: sha256))/\(sha256).jpg" }
    func failurePath(sha256: String, size: Int) -> String { "\(directory(size: size, sha256: sha256))/\(sha256).failed" }

    /// The thumbnail if it is already made.
    public func cached(sha256: String, size: Int) -> Thumbnail? {
        var st = stat()
        let file = path(sha256: sha256, size: size)
        guard stat(file, &st) == 0 else { return nil }
        return Thumbnail(path: file, size: Int64(st.st_size),
                         mtimeNs: st.st_mtim.nanoseconds)
    }

    /// Whether making this thumbnail failed before.
    public func failed(sha256: String, size: Int) -> Bool {
        access(failurePath(sha256: sha256, size: size), F_OK) == 0
    }

    /// The thumbnail of an asset, made now if it is missing; nil when its bytes cannot be
    /// decoded (logged once, remembered).
    public func thumbnail(for asset: Asset, blob: String, size: Int) -> Thumbnail? {
        if let done = cached(sha256: asset.sha256, size: size) { return done }
        if failed(sha256: asset.sha256, size: size) { return nil }
        let key = "\(size)/\(asset.sha256)"
        // One maker per key; the others wait for it.
        let (condition, mine) = inFlight.withLock { flights -> (NSCondition, Bool) in
            if let existing = flights[key] { return (existing, false) }
            let condition = NSCondition()
            flights[key] = condition
            return (condition, true)
        }
        if !mine {
            condition.lock()
            while inFlight.withLock({ $0[key] === condition }) { condition.wait(until: Date().addingTimeInterval(1)) }
            condition.unlock()
            return cached(sha256: asset.sha256, size: size)
        }
        defer {
            inFlight.withLock { $0.removeValue(forKey: key) }
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
        return make(asset: asset, blob: blob, size: size)
    }

    private func make(asset: Asset, blob: String, size: Int) -> Thumbnail? {
        let directory = directory(size: size, sha256: asset.sha256)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            Log.error("cannot create \(directory): \(error)")
            return nil
        }
        let temporary = "\(directory)/.\(asset.sha256).\(UInt64.random(in: 0...UInt64.max).hex16).tmp"
        let kind: ThumbnailMaker.Kind = asset.mediaType == .video ? .video : .photo
        do {
            try maker.make(input: blob, kind: kind, size: size, output: temporary)
            guard rename(temporary, path(sha256: asset.sha256, size: size)) == 0 else {
                throw LibraryError.io("cannot move the thumbnail into place", errno: errno)
            }
            return cached(sha256: asset.sha256, size: size)
        } catch {
            unlink(temporary)
            let reason: String
            if case LibraryError.refused(let why)? = error as? LibraryError { reason = why } else { reason = "\(error)" }
            // Remember it, so that a broken file is logged once and not decoded again.
            if let data = reason.data(using: .utf8) {
                FileManager.default.createFile(atPath: failurePath(sha256: asset.sha256, size: size), contents: data)
            }
            Log.warning("no thumbnail for \(asset.name) (asset \(asset.id)): \(reason)")
            return nil
        }
    }
}
