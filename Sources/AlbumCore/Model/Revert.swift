extension Library {
    /// Makes an earlier version of an asset current again, as a new version (the history
    /// only grows): its bytes are what that version's were, its metadata is read again
    /// from them, and st_mtime is now. `version` nil: the one before the current one.
    @discardableResult
    public func revert(_ id: Int64, to version: Int?, reader: any MetadataReading = InProcessMetadata()) throws -> Asset {
        guard let asset = try asset(id: id) else { throw LibraryError.notFound("asset \(id)") }
        let history = try versions(of: id)
        let wanted = version ?? (asset.version - 1)
        guard let old = history.first(where: { $0.version == wanted }) else {
            let known = history.map { String($0.version) }.joined(separator: ", ")
            throw LibraryError.notFound("version \(wanted) of \(asset.name) (it has \(known))")
        }
        if old.sha256 == asset.sha256 {
            throw LibraryError.invalidName("version \(wanted) of \(asset.name) is its current bytes already", errno: 22)
        }
        let blob = try openBlob(old.sha256, owner: "version \(wanted) of \(asset.label)")
        let header = try blob.read(count: Sniffer.headerLength, at: 0)
        guard case .media(let format) = Sniffer.sniff(header, name: asset.originalName) else {
            throw LibraryError.refused("version \(wanted) of \(asset.name) is not a photo or video this albumfs reads")
        }
        let metadata = try reader.metadata(of: blob, format: format)
        return try write { tx in
            try tx.addVersion(of: id, sha256: old.sha256, size: old.size, metadata: metadata, mtimeNs: nowNanoseconds())
        }
    }
}
