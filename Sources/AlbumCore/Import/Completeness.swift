import Glibc

/// Whether a file being written looks whole, judged by how its format ends: a JPEG's
/// end-of-image marker, a PNG's IEND chunk, ISO media boxes that add up to the file's
/// size, a GIF's trailer. Other formats are taken as whole.
///
/// An NFS client's COMMIT reaches the mount as fsync; the mount imports at that point
/// only when the bytes look whole, so that a client writing with FILE_SYNC (an fsync
/// after every chunk) does not import every prefix of its file.
public enum Completeness {
    public static func looksComplete(fd: Int32) -> Bool {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        let size = Int64(st.st_size)
        guard size >= 16 else { return false }
        func bytes(_ offset: Int64, _ count: Int) -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: count)
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return n == count ? buffer : []
        }
        let head = bytes(0, 12)
        guard head.count == 12 else { return false }
        if head.starts(with: [0xFF, 0xD8]) {
            // The end-of-image marker in the last bytes (some cameras pad after it).
            let tailLength = Int(min(size, 4096))
            let tail = bytes(size - Int64(tailLength), tailLength)
            return zip(tail, tail.dropFirst()).contains { $0 == 0xFF && $1 == 0xD9 }
        }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) {
            return bytes(size - 8, 4) == Array("IEND".utf8)
        }
        if head.starts(with: Array("GIF8".utf8)) {
            return bytes(size - 1, 1) == [0x3B]
        }
        if Array(head[4..<8]) == Array("ftyp".utf8) {
            // Top-level boxes must tile the file exactly.
            var offset: Int64 = 0
            while offset < size {
                let header = bytes(offset, Int(min(16, size - offset)))
                guard header.count >= 8 else { return false }
                var length = Int64(header[0]) << 24 | Int64(header[1]) << 16 | Int64(header[2]) << 8 | Int64(header[3])
                if length == 1 {
                    guard header.count == 16 else { return false }
                    length = header[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
                } else if length == 0 {
                    length = size - offset  // to the end of the file
                }
                guard length >= 8 else { return false }
                offset += length
            }
            return offset == size
        }
        return true
    }
}
