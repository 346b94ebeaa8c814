// swift-tools-version:6.0
// AlbumFS: a photo library as a FUSE filesystem.
//
// C libraries come from Debian's -dev packages (see mount-scripts/deps); each is a
// system-library target with a module map and a small shim.h for what Swift cannot
// call directly (macros, variadic functions).
import PackageDescription

let package = Package(
    name: "AlbumFS",
    products: [
        .executable(name: "albumfs", targets: ["albumfs"]),
        .executable(name: "albumfs-bench", targets: ["albumfs-bench"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3"),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto"),
        .systemLibrary(name: "CVips", pkgConfig: "vips libheif libpng libjpeg"),
        .systemLibrary(name: "CAV", pkgConfig: "libavformat libavcodec libavutil libswscale"),
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3"),
        .systemLibrary(name: "CSystem"),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq"),
        // exiv2 (C++) behind a C face: no Swift module needs C++ interoperability.
        .target(name: "CExiv2", linkerSettings: [.linkedLibrary("exiv2")]),
        // The kernel's INIT answered by hand (protocol logic in C, not in a header).
        .target(name: "CFuseInit", dependencies: ["CFuse"]),
        // FUSE over io_uring under libfuse 3.14 (liburing; see ring.c).
        .target(name: "CFuseRing", dependencies: ["CFuse"], linkerSettings: [.linkedLibrary("uring")]),

        // Storage core: library layout, schema, blobs, import, albums, trash, versions.
        .target(name: "AlbumCore", dependencies: ["CSQLite", "CCrypto", "CVips", "CAV", "CSystem", "CExiv2", "CPostgres"]),
        // Filesystem core: the namespace, inode numbers, what each operation means.
        .target(name: "AlbumFSCore", dependencies: ["AlbumCore"], exclude: ["Writing/README.md"]),
        // The only code that imports libfuse.
        .target(name: "FuseBridge", dependencies: ["AlbumFSCore", "AlbumCore", "CFuse", "CFuseInit", "CFuseRing"]),
        .executableTarget(name: "albumfs", dependencies: ["AlbumCore", "AlbumFSCore", "FuseBridge"]),
        // The benchmark (mount-scripts/bench): side-by-side ratios, never part of the tests.
        .executableTarget(name: "albumfs-bench", dependencies: ["AlbumCore"]),

        // Shared by the test targets: samples, expected.json, temporary libraries, processes.
        .target(name: "TestSupport", dependencies: ["AlbumCore", "AlbumFSCore"], path: "Tests/TestSupport"),
        .testTarget(name: "AlbumCoreTests", dependencies: ["AlbumCore", "TestSupport", "albumfs"]),
        .testTarget(name: "AlbumFSCoreTests", dependencies: ["AlbumFSCore", "AlbumCore", "TestSupport"]),
        .testTarget(name: "MountTests", dependencies: ["AlbumCore", "TestSupport", "albumfs"]),
        // PRODUCT.md section 3 and the save sequences, one suite run twice: on the
        // filesystem core in-process and on a real mount (TestSupport/Drivers.swift).
        .testTarget(name: "BehaviourTests", dependencies: ["AlbumCore", "AlbumFSCore", "TestSupport", "albumfs"]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
