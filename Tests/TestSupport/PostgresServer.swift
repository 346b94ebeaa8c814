import AlbumCore
import Foundation
import Glibc
import XCTest

/// A PostgreSQL server of a test's own: a new cluster (initdb) in a temporary folder,
/// listening on a Unix socket there and on no network port, stopped (fast shutdown) by
/// `stop()` or when the object goes. PostgreSQL refuses to run as root, so as root the
/// cluster belongs to `nobody` and its programs run through `setpriv`.
public final class PostgresServer: @unchecked Sendable {
    public static let binaries = "/usr/lib/postgresql/15/bin"
    /// The folder of the cluster and of its socket.
    public let folder: String
    private var server: OwnedProcess?

    /// A libpq connection string for `database`.
    public func conninfo(_ database: String = "postgres") -> String {
        "host=\(folder) port=5432 user=albumfs dbname=\(database)"
    }

    /// Makes and starts the cluster; throws (the test fails) when PostgreSQL is missing
    /// or does not start within 30 s.
    public init() throws {
        guard access(Self.binaries + "/postgres", X_OK) == 0 else {
            throw Processes.ProcessError.notFound("PostgreSQL 15 (\(Self.binaries)); mount-scripts/deps test installs it")
        }
        var template = Array("/tmp/albumfs-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Processes.ProcessError.notFound("a temporary folder") }
        folder = String(cString: made)
        // The server dies (fast shutdown) with the test's thread if the test runner dies.
        var runAs = ["/usr/bin/setpriv", "--pdeathsig", "INT"]
        if getuid() == 0 {
            guard let nobody = getpwnam("nobody") else { throw Processes.ProcessError.notFound("the user nobody") }
            chown(folder, nobody.pointee.pw_uid, nobody.pointee.pw_gid)
            runAs += ["--reuid=\(nobody.pointee.pw_uid)", "--regid=\(nobody.pointee.pw_gid)", "--clear-groups"]
        }
        runAs.append("--")
        let data = folder + "/data"
        let initdb = try Processes.run(runAs[0], Array(runAs.dropFirst()) + [Self.binaries + "/initdb", "-D", data, "-A", "trust",
                                                                          "-U", "albumfs", "-E", "UTF8", "--locale=C", "--no-sync"],
                                       timeout: 120)
        guard initdb.status == 0 else {
            throw Processes.ProcessError.notFound("a PostgreSQL cluster: initdb exited with \(initdb.status): \(initdb.stderr)")
        }
        server = try OwnedProcess("postgres", runAs + [Self.binaries + "/postgres", "-D", data, "-k", folder,
                                                       "-c", "listen_addresses=", "-c", "max_connections=200"],
                                  log: folder + "/server.log")
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if (try? PostgresConnection(conninfo())) != nil { return }
            guard server?.isRunning == true else { break }
            usleep(50_000)
        }
        let log = (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? ""
        stop()
        throw Processes.ProcessError.notFound("a running PostgreSQL server; its log: \(log)")
    }

    deinit { stop() }

    /// Fast shutdown (SIGINT: clients are disconnected), then the folder is removed.
    public func stop() {
        if let server {
            if server.isRunning { kill(server.pid, SIGINT) }
            server.stop(grace: 30)
            self.server = nil
        }
        _ = try? FileManager.default.removeItem(atPath: folder)
    }
}

extension PostgresServer {
    private static let sharedServer = Locked<Result<PostgresServer, any Error>?>(nil)
    private static let databaseCount = Locked(0)

    /// One server for the whole test process, started by the first test that asks and
    /// stopped when the process exits. It is started from a thread that lives as long as
    /// the process: `--pdeathsig` fires when the *thread* that started the server ends,
    /// and the test that asked first may run on a thread that ends before the others.
    public static func shared() throws -> PostgresServer {
        try sharedServer.withLock { found in
            if let found { return try found.get() }
            let started = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var result: Result<PostgresServer, any Error>!
            let keeper = Thread {
                result = Result { try PostgresServer() }
                started.signal()
                while true { sleep(3600) }
            }
            keeper.start()
            started.wait()
            found = result
            atexit { PostgresServer.stopShared() }
            return try result.get()
        }
    }

    private static func stopShared() {
        if case .success(let server) = sharedServer.withLock({ $0 }) { server.stop() }
    }

    /// A new, empty database of this server (fast: copied from its template); its
    /// connection string.
    public func makeDatabase() throws -> String {
        let name = "lib\(Self.databaseCount.withLock { $0 += 1; return $0 })_\(getpid())"
        try PostgresConnection(conninfo()).execute("CREATE DATABASE \(name)")
        return conninfo(name)
    }

    /// Drops a database made by `makeDatabase`, ending its sessions first.
    public func dropDatabase(_ conninfo: String) {
        guard let name = conninfo.split(separator: " ").first(where: { $0.hasPrefix("dbname=") })?.dropFirst(7) else { return }
        try? PostgresConnection(self.conninfo()).execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }
}
