/// Whether a file being written looks whole, judged by its format's own structure:
/// a JPEG's end-of-image marker, a PNG's IEND chunk, a GIF's trailer, ISO media boxes
/// (HEIF, AVIF, CR3, MP4, MOV) that tile the file, a RIFF size (WebP, AVI) equal to the
/// file's, a Matroska segment that ends where the file does, TIFF directories and the
/// strips, tiles and previews they point at all inside the file (TIFF, BigTIFF, DNG, NEF,
/// CR2, ARW, ORF, RW2), and a RAF's JPEG and sensor data inside it.
///
/// An NFS client's COMMIT reaches the mount as fsync, and an NFS server keeps files open
/// long after their last write; the mount imports such a file only when it looks whole,
/// so that a slow writer's prefixes are never imported.
public enum Completeness {
    public static func looksComplete(_ file: FileDescriptor) -> Bool {
        guard let size = try? file.size(), size >= 16 else { return false }
        let reader = Reader(file: file, size: size)
        guard let head = reader.bytes(0, 16), head.count == 16 else { return false }
        func starts(_ prefix: [UInt8]) -> Bool { head.starts(with: prefix) }
        if starts([0xFF, 0xD8]) { return jpeg(reader) }
        if starts([0x89, 0x50, 0x4E, 0x47]) { return reader.bytes(size - 8, 4) == Array("IEND".utf8) }
        if starts(Array("GIF8".utf8)) { return reader.bytes(size - 1, 1) == [0x3B] }
        if Array(head[4..<8]) == Array("ftyp".utf8) { return isoMedia(reader) }
        if starts(Array("RIFF".utf8)) { return riff(reader) }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) { return matroska(reader) }
        if starts(Array("FUJIFILMCCD-RAW".utf8)) { return raf(reader) }
        if starts([0x49, 0x49]) || starts([0x4D, 0x4D]) { return tiff(reader) }
        return true
    }

    struct Reader {
        let file: FileDescriptor
        let size: Int64

        func bytes(_ offset: Int64, _ count: Int) -> [UInt8]? {
            guard offset >= 0, count >= 0, offset + Int64(count) <= size,
                  let read = try? file.read(count: count, at: offset), read.count == count else { return nil }
            return read
        }

        func integer(_ offset: Int64, _ count: Int, littleEndian: Bool) -> UInt64? {
            guard let b = bytes(offset, count) else { return nil }
            let ordered = littleEndian ? b.reversed() : b
            return ordered.reduce(0) { $0 << 8 | UInt64($1) }
        }
    }

    /// The end-of-image marker in the last bytes (some cameras pad after it).
    static func jpeg(_ r: Reader) -> Bool {
        let tailLength = Int(min(r.size, 4096))
        guard let tail = r.bytes(r.size - Int64(tailLength), tailLength) else { return false }
        return zip(tail, tail.dropFirst()).contains { $0 == 0xFF && $1 == 0xD9 }
    }

    /// Top-level boxes tile the file exactly.
    static func isoMedia(_ r: Reader) -> Bool {
        var offset: Int64 = 0
        while offset < r.size {
            guard let header = r.bytes(offset, Int(min(16, r.size - offset))), header.count >= 8 else { return false }
            var length = Int64(header[0]) << 24 | Int64(header[1]) << 16 | Int64(header[2]) << 8 | Int64(header[3])
            if length == 1 {
                guard header.count == 16 else { return false }
                length = header[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            } else if length == 0 {
                length = r.size - offset  // to the end of the file
            }
            guard length >= 8 else { return false }
            offset += length
        }
        return offset == r.size
    }

    /// The RIFF chunk's size covers the file (an odd size is padded by one byte).
    static func riff(_ r: Reader) -> Bool {
        guard let declared = r.integer(4, 4, littleEndian: true) else { return false }
        let end = Int64(declared) + 8
        return end == r.size || end + 1 == r.size
    }

    /// The EBML header, then a Segment whose declared size ends with the file. A
    /// segment of unknown size (live streams) cannot be judged, and counts as whole.
    static func matroska(_ r: Reader) -> Bool {
        var offset: Int64 = 0
        for _ in 0..<2 {
            guard let (id, idLength) = vint(r, offset, keepMarker: true),
                  let (length, lengthLength, unknown) = sizeVint(r, offset + Int64(idLength)) else { return false }
            let dataStart = offset + Int64(idLength + lengthLength)
            if id == 0x1853_8067 {  // Segment
                if unknown { return true }
                return dataStart + Int64(length) == r.size
            }
            if unknown { return false }
            offset = dataStart + Int64(length)
        }
        return false
    }

    private static func vint(_ r: Reader, _ offset: Int64, keepMarker: Bool) -> (UInt64, Int)? {
        guard let first = r.bytes(offset, 1)?.first, first != 0 else { return nil }
        let length = first.leadingZeroBitCount + 1
        guard length <= 8, let all = r.bytes(offset, length) else { return nil }
        var value = keepMarker ? UInt64(first) : UInt64(first & (0xFF >> length))
        for b in all.dropFirst() { value = value << 8 | UInt64(b) }
        return (value, length)
    }

    private static func sizeVint(_ r: Reader, _ offset: Int64) -> (UInt64, Int, Bool)? {
        guard let (value, length) = vint(r, offset, keepMarker: false) else { return nil }
        let allOnes = (UInt64(1) << UInt64(7 * length)) - 1
        return (value, length, value == allOnes)
    }

    /// A RAF: the embedded JPEG and the sensor data it points at are inside the file.
    static func raf(_ r: Reader) -> Bool {
        guard let jpegOffset = r.integer(84, 4, littleEndian: false), let jpegLength = r.integer(88, 4, littleEndian: false),
              let cfaOffset = r.integer(100, 4, littleEndian: false), let cfaLength = r.integer(104, 4, littleEndian: false)
        else { return false }
        return Int64(jpegOffset + jpegLength) <= r.size && Int64(cfaOffset + cfaLength) <= r.size
    }

    /// TIFF structures: every directory, and every strip, tile, preview and sub-directory
    /// one points at, lies inside the file.
    static func tiff(_ r: Reader) -> Bool {
        guard let order = r.bytes(0, 2) else { return false }
        let little = order == [0x49, 0x49]
        guard let magic = r.integer(2, 2, littleEndian: little) else { return false }
        let big = magic == 43
        var pending: [Int64] = []
        if big {
            guard let first = r.integer(8, 8, littleEndian: little) else { return false }
            pending.append(Int64(first))
        } else {
            guard let first = r.integer(4, 4, littleEndian: little) else { return false }
            pending.append(Int64(first))
        }
        var seen = Set<Int64>()
        let entrySize: Int64 = big ? 20 : 12
        let countSize = big ? 8 : 2
        let offsetSize = big ? 8 : 4
        while let ifd = pending.popLast() {
            if ifd == 0 || seen.contains(ifd) { continue }
            guard seen.count < 64, ifd < r.size else { return false }
            seen.insert(ifd)
            guard let count = r.integer(ifd, countSize, littleEndian: little), count < 10_000 else { return false }
            let entriesStart = ifd + Int64(countSize)
            guard let table = r.bytes(entriesStart, Int(Int64(count) * entrySize + Int64(offsetSize))) else { return false }
            var values: [UInt16: [UInt64]] = [:]
            for i in 0..<Int(count) {
                let e = Array(table[(i * Int(entrySize))..<((i + 1) * Int(entrySize))])
                func number(_ slice: ArraySlice<UInt8>) -> UInt64 {
                    (little ? Array(slice.reversed()) : Array(slice)).reduce(0) { $0 << 8 | UInt64($1) }
                }
                let tag = UInt16(number(e[0..<2]))
                let type = number(e[2..<4])
                let n = number(e[4..<(big ? 12 : 8)])
                let unit: UInt64 = [1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8, 17: 8, 18: 8][type] ?? 1
                let total = unit * n
                let inline = total <= UInt64(offsetSize)
                let field = Array(e[(big ? 12 : 8)...])
                let dataOffset = inline ? 0 : number(field[0..<offsetSize])
                if !inline && Int64(dataOffset + total) > r.size { return false }
                // The values of the tags whose pointers matter.
                guard [273, 279, 324, 325, 330, 513, 514, 34665, 34853].contains(tag), n > 0, n < 100_000 else { continue }
                var list: [UInt64] = []
                let raw: [UInt8]
                if inline { raw = Array(field.prefix(Int(total))) } else {
                    guard let fetched = r.bytes(Int64(dataOffset), Int(total)) else { return false }
                    raw = fetched
                }
                let step = Int(unit)
                guard step == 2 || step == 4 || step == 8 else { continue }
                for k in 0..<Int(n) { list.append(number(raw[(k * step)..<((k + 1) * step)])) }
                values[tag] = list
            }
            for (offsets, lengths) in [(UInt16(273), UInt16(279)), (324, 325), (513, 514)] {
                guard let o = values[offsets], let l = values[lengths] else { continue }
                for (start, length) in zip(o, l) where Int64(start + length) > r.size { return false }
            }
            for pointer in (values[330] ?? []) + (values[34665] ?? []) + (values[34853] ?? []) {
                pending.append(Int64(pointer))
            }
            let nextField = Array(table[(Int(count) * Int(entrySize))...])
            let next = (little ? Array(nextField.reversed()) : nextField).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if next != 0 { pending.append(Int64(next)) }
        }
        return true
    }
}
