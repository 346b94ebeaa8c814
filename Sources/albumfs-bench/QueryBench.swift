import AlbumCore
import Foundation

/// Every smart-album and date-view query of a large library: count, the first readdir
/// page, a whole listing in readdir-sized pages, and a lookup by name.
enum QueryBench {
    static func run(dir: String, assets: Int) throws {
        let seed = try DataSets.seedPhoto(in: dir)
        let path = dir + "/queries.library"
        var (library, sha) = try DataSets.library(at: path, seed: seed)
        let build = Harness.now()
        try library.addSyntheticAssets(DataSets.assets(assets), sha256: sha)
        Harness.say("  (built \(assets) synthetic assets in \(String(format: "%.1f", Harness.now() - build)) s)")
        library = try Library.open(at: path, access: .reader)

        var views: [(String, AssetView)] = [("All Photos", .allPhotos)]
        views += SmartAlbum.allCases.map { ("Smart Albums/\($0.folderName)", AssetView.smart($0)) }
        let someDay = try library.days(ofMonth: try library.months(ofYear: 2020)[5])[3]
        views.append(("By Date/.../\(someDay)", .day(someDay)))
        let goal = 0.1
        for (name, view) in views {
            let count = try library.count(in: view)
            let first = try Harness.median { _ = try library.assets(in: view, after: -1, limit: 25) }
            let whole = try Harness.median {
                var cursor: Int64 = -1
                while let last = try library.assets(in: view, after: cursor, limit: 100).last { cursor = last.sortKey }
            }
            Harness.record("\(name) (\(count)): first page", ours: first, baseline: nil, baselineName: "", goal: .below(goal))
            Harness.record("\(name) (\(count)): whole listing", ours: whole, baseline: nil, baselineName: "")
        }
        let years = try Harness.median { _ = try library.years() }
        Harness.record("By Date: years", ours: years, baseline: nil, baselineName: "", goal: .below(goal))
        let months = try Harness.median { _ = try library.months(ofYear: 2020) }
        Harness.record("By Date/2020: months", ours: months, baseline: nil, baselineName: "", goal: .below(goal))
        let days = try Harness.median { _ = try library.days(ofMonth: 202006) }
        Harness.record("By Date/2020/2020-06: days", ours: days, baseline: nil, baselineName: "", goal: .below(goal))
        let name = String(format: "IMG_%07d.JPG", assets / 2)
        let lookup = try Harness.median(50) { _ = try library.asset(named: name, in: .allPhotos) }
        Harness.record("All Photos: lookup by name", ours: lookup, baseline: nil, baselineName: "", goal: .below(goal))
    }
}
