import AlbumCore
import Foundation
import TestSupport
import XCTest

/// A seeded random driver for the code that reads untrusted bytes: the sniffer and the
/// metadata reader (libvips, libexif, libheif, libavformat behind them) on mutated
/// sample files, and name handling on random byte strings. A crash fails the run.
/// `ALBUMFS_FUZZ_SECONDS` bounds it (default 20); `ALBUMFS_FUZZ_SEED` picks the seed.
final class FuzzTests: XCTestCase {
    var seconds: Double { Double(ProcessInfo.processInfo.environment["ALBUMFS_FUZZ_SECONDS"] ?? "") ?? 20 }
    var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["ALBUMFS_FUZZ_SEED"] ?? "") ?? 20261129 }

    func testMetadataReaderOnMutatedSamples() throws {
        let temp = TempDirectory()
        defer { temp.remove() }
        let corpus = Samples.media.filter { $0.size < 3_000_000 }.map { try? Data(contentsOf: URL(fileURLWithPath: $0.absolutePath)) }
            .compactMap { $0 }.map { Array($0) }
        XCTAssertGreaterThan(corpus.count, 50)
        var random = SplitMix(seed: seed)
        let deadline = Date().addingTimeInterval(seconds)
        var runs = 0, refused = 0
        while Date() < deadline {
            var bytes = corpus[Int(random.next() % UInt64(corpus.count))]
            switch random.next() % 5 {
            case 0: // flip bytes, mostly near the start where the headers are
                for _ in 0..<(1 + random.next() % 16) {
                    let at = Int(random.next() % UInt64(min(bytes.count, 4096 + Int(random.next() % 65536))))
                    bytes[at] ^= UInt8(truncatingIfNeeded: random.next() | 1)
                }
            case 1: // truncate
                bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count))))
            case 2: // splice a chunk of another file in
                let other = corpus[Int(random.next() % UInt64(corpus.count))]
                let from = Int(random.next() % UInt64(other.count)), length = min(other.count - from, Int(random.next() % 4096))
                let at = Int(random.next() % UInt64(bytes.count))
                bytes.insert(contentsOf: other[from..<(from + length)], at: at)
            case 3: // absurd 16- and 32-bit values at random places (counts, offsets, sizes)
                for _ in 0..<8 {
                    let at = Int(random.next() % UInt64(max(1, min(bytes.count - 4, 8192))))
                    let value: [UInt8] = random.next() % 2 == 0 ? [0xFF, 0xFF, 0xFF, 0x7F] : [0x00, 0x00, 0x00, 0x80]
                    for k in 0..<4 where at + k < bytes.count { bytes[at + k] = value[k] }
                }
            default: // random bytes behind a real header
                let keep = min(bytes.count, 12 + Int(random.next() % 64))
                bytes = Array(bytes.prefix(keep)) + (0..<Int(random.next() % 20000)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            let path = temp.sub("case-\(runs % 4)")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            switch Sniffer.sniff(Array(bytes.prefix(Sniffer.headerLength)), name: "case.bin") {
            case .unsupported: refused += 1
            case .media(let format):
                do {
                    let metadata = try MetadataReader.read(path: path, format: format)
                    XCTAssertGreaterThanOrEqual(metadata.width ?? 0, 0)
                    XCTAssertGreaterThanOrEqual(metadata.height ?? 0, 0)
                    if let lat = metadata.latitude { XCTAssertLessThanOrEqual(abs(lat), 90) }
                    if let lon = metadata.longitude { XCTAssertLessThanOrEqual(abs(lon), 180) }
                    if let o = metadata.orientation { XCTAssertTrue((1...8).contains(o)) }
                } catch LibraryError.refused {
                    refused += 1
                }
            }
            runs += 1
        }
        print("fuzz: \(runs) mutated files read (\(refused) refused) in \(Int(seconds)) s, seed \(seed)")
        XCTAssertGreaterThan(runs, 20)
    }

    func testNamesOnRandomBytes() throws {
        var random = SplitMix(seed: seed &+ 1)
        let alphabet: [[UInt8]] = [Array("a".utf8), Array("Z".utf8), Array(".".utf8), Array("/".utf8), [0], [0xFF], [0xC3, 0xA9],
                                   [0x65, 0xCC, 0x81], [0xE2, 0x80, 0x8B], [0xF0, 0x9F, 0x93, 0xB7], [0xC3], Array(" ".utf8),
                                   Array("@".utf8), Array("[".utf8), Array("`".utf8), Array("{".utf8), Array("Q".utf8), Array("IMG_0001.JPG".utf8)]
        for _ in 0..<50_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int(random.next() % 70) { bytes += alphabet[Int(random.next() % UInt64(alphabet.count))] }
            do {
                let name = try Names.validate(bytes: bytes)
                XCTAssertLessThanOrEqual(name.utf8.count, 255)
                XCTAssertFalse(name.contains("/"))
                let key = Names.key(name)
                XCTAssertEqual(Names.key(key), key, "the key is stable")
                // The ASCII shortcut must give the key the library stored before it existed.
                XCTAssertEqual(key, name.precomposedStringWithCanonicalMapping.lowercased(), "the key is Foundation's NFC, lowercased")
                XCTAssertEqual(Names.key(name.decomposedStringWithCanonicalMapping), key, "NFD and NFC spellings are one name")
                let suffixed = Names.withSuffix(name, Int(random.next() % 1000) + 2)
                XCTAssertLessThanOrEqual(suffixed.utf8.count, 255)
            } catch let error as LibraryError {
                XCTAssertTrue([EILSEQ, ENAMETOOLONG, EINVAL].contains(error.errno), "\(error)")
            }
        }
    }
}
