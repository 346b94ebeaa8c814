import AlbumCore
import AlbumFSCore
import XCTest

/// The inode-number codec (Node.swift) over every tag and at its limits: each node that
/// can be handed out comes back from its number, and numbers never handed out decode to
/// nothing (an NFS client's stale or forged handle is ESTALE, never some other file).
final class InodeCodecTests: XCTestCase {
    static let tag: UInt64 = 1 << 56
    static let objectLimit: UInt64 = 1 << 48

    /// Every kind of node, at the edges of its range, with the number it must have.
    static let nodes: [(Node, UInt64)] = {
        var table: [(Node, UInt64)] = [
            (.root, 1), (.albumsRoot, 2), (.allPhotos, 3), (.byDate, 4), (.smartAlbums, 5),
            (.object(1000), 1000), (.object(1001), 1001), (.object(Int64(objectLimit - 1)), objectLimit - 1),
            (.year(1000), tag | 1000), (.year(2026), tag | 2026), (.year(9999), tag | 9999),
            (.month(100001), tag | 100001), (.month(202611), tag | 202611), (.month(999912), tag | 999912),
            (.day(10000101), tag | 10000101), (.day(20260229), tag | 20260229), (.day(99991231), tag | 99991231),
            (.thumbnail(asset: 1000), 2 << 56 | 1000),
            (.thumbnail(asset: Int64(objectLimit - 1)), 2 << 56 | (objectLimit - 1)),
            (.thumbnails(of: 3), 3 << 56 | 3),
            (.thumbnails(of: 1000), 3 << 56 | 1000),
            (.thumbnails(of: objectLimit - 1), 3 << 56 | (objectLimit - 1)),
            (.thumbnails(of: tag | 20261130), 3 << 56 | 1 << 52 | 20261130),
            (.sharedThumbnails(of: 3), 4 << 56 | 3),
            (.sharedThumbnails(of: tag | 20261130), 4 << 56 | 1 << 52 | 20261130),
            (.sharedSize(of: 1000, large: false), 5 << 56 | 1000),
            (.sharedSize(of: objectLimit - 1, large: true), 5 << 56 | 1 << 51 | (objectLimit - 1)),
            (.sharedSize(of: tag | 20261130, large: true), 5 << 56 | 1 << 52 | 1 << 51 | 20261130),
            (.sharedThumbnail(id: 1000, large: false, entry: false), 6 << 56 | 1000),
            (.sharedThumbnail(id: Int64(objectLimit - 1), large: true, entry: false), 6 << 56 | 1 << 51 | (objectLimit - 1)),
            (.sharedThumbnail(id: 1, large: false, entry: true), 6 << 56 | 1 << 50 | 1),
            (.sharedThumbnail(id: Int64(objectLimit - 1), large: true, entry: true), 6 << 56 | 1 << 51 | 1 << 50 | (objectLimit - 1)),
        ]
        for album in SmartAlbum.allCases {
            table.append((.smart(album), 16 + UInt64(album.rawValue)))
            table.append((.thumbnails(of: 16 + UInt64(album.rawValue)), 3 << 56 | (16 + UInt64(album.rawValue))))
        }
        return table
    }()

    func testEveryNodeRoundTrips() {
        for (node, number) in Self.nodes {
            XCTAssertEqual(node.ino, number, "\(node)")
            XCTAssertEqual(Node(ino: number), node, "\(number)")
        }
        // No two nodes share a number.
        XCTAssertEqual(Set(Self.nodes.map(\.1)).count, Self.nodes.count)
    }

    func testNumbersNeverHandedOutDecodeToNothing() {
        let never: [(UInt64, String)] = [
            (0, "zero"), (6, "between the fixed folders and the smart albums"), (15, "just below the smart albums"),
            (16 + UInt64(SmartAlbum.allCases.count), "just past the last smart album"), (999, "just below the first id"),
            (Self.objectLimit, "past the last id"), (Self.tag - 1, "the largest untagged number"),
            (Self.tag | 999, "a year of three digits"), (Self.tag | 10000, "a year of five digits"),
            (Self.tag | 202600, "month 0"), (Self.tag | 202613, "month 13"),
            (Self.tag | 20260100, "day 0"), (Self.tag | 20261301, "day in month 13"), (Self.tag | 20260132, "day 32"),
            (Self.tag | 100000000, "a code past every day"),
            (2 << 56 | 999, "the thumbnail of a fixed folder's number"), (2 << 56 | Self.objectLimit, "a thumbnail past the last id"),
            (3 << 56 | 4, "the thumbnails of By Date, which lists no photos"),
            (3 << 56 | 1 << 52 | 2026, "the thumbnails of a year, which lists no photos"),
            (3 << 56 | 1 << 52 | 202611, "the thumbnails of a month, which lists no photos"),
            (4 << 56 | 4, "the shared thumbnails of By Date, which lists no photos"),
            (5 << 56 | 1 << 52 | 2026, "a size folder of a year's shared thumbnails"),
            (6 << 56 | 999, "the shared thumbnail of a number below the first asset"),
            (6 << 56 | 1 << 50, "the shared thumbnail of album entry 0"),
            (6 << 56 | Self.objectLimit, "a shared thumbnail past the last id"),
            (7 << 56 | 1000, "an unknown tag"), (0xFF << 56 | 1000, "the highest tag"), (UInt64.max, "all ones"),
        ]
        for (number, why) in never {
            XCTAssertNil(Node(ino: number), "\(String(number, radix: 16)): \(why)")
        }
    }

    /// Node ids: a photo's or thumbnail's number with a generation (bits 48 to 55), or a
    /// shared thumbnail's (bits 52 to 55, above its size and entry bits), stands for that
    /// number; every other number is its own node id, whatever its bits.
    func testNodeIDsStandForTheirNumbers() {
        for (node, number) in Self.nodes {
            XCTAssertEqual(FileSystem.inode(ofNodeID: number), number, "\(node)")
            switch node {
            case .object, .thumbnail:
                for generation: UInt64 in [1, 7, 255] {
                    XCTAssertEqual(FileSystem.inode(ofNodeID: number | generation << 48), number, "\(node) generation \(generation)")
                }
            case .sharedThumbnail:
                for generation: UInt64 in [1, 7, 15] {
                    XCTAssertEqual(FileSystem.inode(ofNodeID: number | generation << 52), number, "\(node) generation \(generation)")
                }
            default:
                break
            }
        }
    }
}
