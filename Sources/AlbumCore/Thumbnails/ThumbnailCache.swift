import CVips
import Foundation
import Glibc

/// A cached thumbnail JPEG.
public struct Thumbnail: Sendable, Equatable {
    public let path: LibraryPath
    public let size: Int64
    public let mtimeNs: Int64
}

/// The thumbnails of a library, keyed by content (`LibraryPath.thumbnail`), shared by
/// every folder and name that shows the same bytes. A file a decoder says cannot be
/// decoded gets a `.failed` file (its reason) instead, and is not tried again; a failure
/// that passes (a worker out of time on a busy machine, one that could not start) is
/// only logged, and the next look tries again. Both files can be deleted at any time.
public final class ThumbnailCache: Sendable {
    let library: Library
    let decoder: any Decoding
    /// Keys being made now, so that two requests for one thumbnail make it once.
    private let inFlight = Locked<[String: NSCondition]>([:])
    /// Thumbnails found made, by key. A made thumbnail's file is never written again (its
    /// name is its source's hash and its size), so a look at one found before needs no
    /// stat: a viewer's open of a cached thumbnail looked twice (may it wait? then the
    /// open), each a folder opened and a name stat-ed, a fifth of the daemon's time per
    /// open. Files under `thumbnails/` may be deleted at any time: whoever finds a
    /// remembered one missing says so (`missing`), and the next look makes it again.
    private let found = Locked<[String: Thumbnail]>([:])
    /// Bounded: emptied when full (a few MB), then filled again by the next looks.
    private static let foundLimit = 16_384

    public init(library: Library, decoder: any Decoding) {
        self.library = library
        self.decoder = decoder
    }

    /// The thumbnail if it is made already.
    public func cached(sha256: String, size: Int) -> Thumbnail? {
        let key = Self.key(sha256, size)
        if let known = found.withLock({ $0[key] }) { return known }
        let path = LibraryPath.thumbnail(sha256: sha256, size: size, ext: "jpg")
        guard let st = try? library.files.status(path), st.isRegularFile else { return nil }
        let thumbnail = Thumbnail(path: path, size: Int64(st.st_size), mtimeNs: st.modificationNanoseconds)
        found.withLock { found in
            if found.count >= Self.foundLimit { found.removeAll(keepingCapacity: true) }
            found[key] = thumbnail
        }
        return thumbnail
    }

    /// The thumbnail `cached` returned for these was found missing on disk (its file
    /// deleted since): the next look stats it again, and makes it when it is gone.
    public func missing(sha256: String, size: Int) {
        _ = found.withLock { $0.removeValue(forKey: Self.key(sha256, size)) }
    }

    private static func key(_ sha256: String, _ size: Int) -> String { "\(size)/\(sha256)" }

    /// Whether a decoder said these bytes cannot be decoded.
    public func failed(sha256: String, size: Int) -> Bool {
        library.files.exists(.thumbnail(sha256: sha256, size: size, ext: "failed"))
    }

    /// The thumbnail of an asset, made now if it is missing; nil when its bytes cannot be
    /// decoded (logged once, remembered) or the decoder failed for now (logged).
    public func thumbnail(for asset: Asset, size: Int) -> Thumbnail? {
        if let done = cached(sha256: asset.sha256, size: size) { return done }
        if failed(sha256: asset.sha256, size: size) { return nil }
        let key = Self.key(asset.sha256, size)
        // One maker per key; the others wait for it.
        let (condition, mine) = inFlight.withLock { flights -> (NSCondition, Bool) in
            if let existing = flights[key] { return (existing, false) }
            let condition = NSCondition()
            flights[key] = condition
            return (condition, true)
        }
        if !mine {
            condition.lock()
            while inFlight.withLock({ $0[key] === condition }) { _ = condition.wait(until: Date().addingTimeInterval(1)) }
            condition.unlock()
            return cached(sha256: asset.sha256, size: size)
        }
        defer {
            _ = inFlight.withLock { $0.removeValue(forKey: key) }
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
        return make(asset: asset, size: size)
    }

    private func make(asset: Asset, size: Int) -> Thumbnail? {
        let kind: ThumbnailMaker.Kind = asset.mediaType == .video ? .video : asset.format == MediaFormat.raw.rawValue ? .raw : .photo
        var failure: DecoderError?
        for attempt in 0..<2 {
            do {
                let blob = try library.openBlob(of: asset)
                let jpeg = try decoder.thumbnail(of: blob, kind: kind, size: size)
                try store(jpeg, sha256: asset.sha256, size: size)
                return cached(sha256: asset.sha256, size: size)
            } catch let error as DecoderError {
                failure = error
                // A crash may be the machine's (memory) as well as the bytes': one more try
                // on a fresh worker before it counts as the bytes'.
                if case .crashed = error, attempt == 0 { continue }
                break
            } catch {
                Log.warning("no thumbnail for \(asset.name) (asset \(asset.id)) now: \(error)")
                return nil
            }
        }
        guard let failure else { return nil }
        switch failure {
        case .transient(let why):
            Log.warning("no thumbnail for \(asset.name) (asset \(asset.id)) now: \(why); it is tried again on the next look")
        case .refused, .crashed:
            // Remembered, so that a broken file is logged once and not decoded again.
            try? store(Array(failure.description.utf8), sha256: asset.sha256, size: size, ext: "failed")
            Log.warning("no thumbnail for \(asset.name) (asset \(asset.id)): \(failure)")
        }
        return nil
    }

    /// The shared PNGs' format: a new one when their bytes change for the same photo.
    /// 3: every PNG made from a JPEG of at least its own side (2, with `-o
    /// thumbnail_size` under 256, made `large/` ones smaller).
    static let sharedFormat = "png-rgba-text-3"

    /// The shared-repository PNG (freedesktop.org, `.sh_thumbnails`) of `side` pixels
    /// made from `jpeg` (this cache's own thumbnail of the bytes `sha256`), naming the
    /// original `uri` with `mtimeSeconds`; made now if missing. Our own JPEG is decoded
    /// here, in this process: its bytes are ours, not a user's.
    public func sharedPNG(of jpeg: Thumbnail, sha256: String, side: Int, uri: String, mtimeSeconds: Int64) throws -> Thumbnail {
        // The format is in the key: PNGs an earlier release cached (comments in zTXt,
        // which readers of the specification skip) are never served again.
        let key = String(md5Hex(Array("\(Self.sharedFormat)\u{0}\(uri)\u{0}\(mtimeSeconds)".utf8)).prefix(16))
        let path = LibraryPath.sharedThumbnail(sha256: sha256, side: side, key: key)
        if let st = try library.files.status(path), st.isRegularFile {
            return Thumbnail(path: path, size: Int64(st.st_size), mtimeNs: st.modificationNanoseconds)
        }
        MetadataReader.initialize()
        let source = try library.files.open(jpeg.path, flags: O_RDONLY)
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard shim_vips_shared_png(source.procPath, Int32(side), uri, String(mtimeSeconds), &buffer, &length) == 0, let buffer else {
            throw LibraryError.io("cannot make the shared thumbnail of \(uri): \(MetadataReader.takeVipsError())", errno: EIO)
        }
        defer { g_free(buffer) }
        try store(Array(UnsafeRawBufferPointer(start: buffer, count: length)), at: path, sha256: sha256)
        guard let st = try library.files.status(path) else { throw LibraryError.notFound(path.relative) }
        return Thumbnail(path: path, size: Int64(st.st_size), mtimeNs: st.modificationNanoseconds)
    }

    /// Writes a thumbnail (or a failure mark) into place: a temporary file, then a rename.
    private func store(_ bytes: [UInt8], sha256: String, size: Int, ext: String = "jpg") throws {
        try store(bytes, at: LibraryPath.thumbnail(sha256: sha256, size: size, ext: ext), sha256: sha256)
    }

    private func store(_ bytes: [UInt8], at path: LibraryPath, sha256: String) throws {
        try library.files.makeFolders(path.parent)
        let temporary = path.parent.appending(".\(sha256).\(UInt64.random(in: 0...UInt64.max).hex16).tmp")
        do {
            let file = try library.files.open(temporary, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            try bytes.withUnsafeBytes { _ = try file.write($0, at: 0) }
            try library.files.rename(temporary, to: path)
        } catch {
            _ = try? library.files.remove(temporary)
            throw error
        }
    }
}
