import AlbumCore
import Glibc

/// Sidecars as the write path sees them (their rules are in AlbumCore/Model/Sidecars.swift):
/// an XMP sidecar closed or renamed into place is read, in a decoder worker since its
/// bytes are untrusted, and the photos it belongs to take what it says; one renamed away
/// or removed gives back what it gave.
extension FileSystem {
    /// Reads plain file `id` as a sidecar if its name makes it one that is read (XMP, a
    /// camera's `.THM`).
    func readSidecarIfOne(_ id: Int64) {
        guard let file = try? library.plainFile(id: id), Sidecars.isRead(file.name), !file.isSymlink else { return }
        var reading: MediaMetadata?
        do {
            let bytes = try library.files.open(file.bytes, flags: O_RDONLY)
            reading = try decoder.sidecar(of: bytes)
        } catch {
            Log.warning("the sidecar \(file.name) is kept, but it cannot be read: \(error)")
        }
        let photos = (try? library.read { try $0.assets(showingIn: file.dirIno, named: file.name) }) ?? []
        sidecarChanged(photos) { tx in try tx.setSidecarReading(id, reading) }
    }

    /// A sidecar called `name` left folder `dir` (removed, renamed away).
    func sidecarWent(named name: String, in dir: UInt64) {
        guard Sidecars.isRead(name) else { return }
        let photos = (try? library.read { try $0.assets(showingIn: dir, named: name) }) ?? []
        sidecarChanged(photos) { tx in try tx.sidecarChanged(named: name, in: dir) }
    }

    /// Runs `change` and tells the kernel about the photos whose date it moved.
    private func sidecarChanged(_ photos: [Int64], _ change: (Transaction) throws -> [Int64]) {
        let before = photos.compactMap { try? library.asset(id: $0) }
        do {
            _ = try library.write { try change($0) }
        } catch {
            Log.warning("reading a sidecar into its photo: \(error)")
            return
        }
        for old in before {
            guard let now = try? library.asset(id: old.id), now.takenAt != old.takenAt || now.takenOffset != old.takenOffset else { continue }
            afterChange(asset: now, views: old)
        }
    }
}
