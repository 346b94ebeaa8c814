import AlbumCore
import Glibc

/// File servers hold files open for as long as their clients do (smbd for an open SMB
/// handle, nfs-ganesha in its descriptor cache, the kernel's nfsd). A photo they hold in
/// passthrough could not be written by anyone until they let go (`IOMode`), so their
/// opens never start passthrough: they read through the daemon, which costs them
/// nothing next to the network.
enum FileServers {
    /// Executables of file servers (the basename of /proc/PID/exe).
    static let names: Set<String> = ["smbd", "ganesha.nfsd"]

    /// Servers of NFS (the kernel's nfsd, a kernel thread, counts as one): they promise
    /// their clients that a change they answered is on stable storage (RFC 1813).
    static let nfsNames: Set<String> = ["ganesha.nfsd"]

    private enum Kind { case none, smb, nfs }

    /// Answers of the last seconds, by process: reading /proc/PID/exe cost as much as
    /// registering the backing file (`perf` of 10,000 opens), and a reader opens many.
    private static let recent = Locked([Int32: (kind: Kind, until: Double)]())

    /// Whether process (or thread) `pid` is a file server. A kernel thread (nfsd) has no
    /// executable; pid 0 is unknown and counts as not one.
    static func isServer(_ pid: Int32) -> Bool { kind(pid) != .none }

    /// Whether process (or thread) `pid` serves NFS: a change it asks for is made
    /// durable before the answer (`setattr`, `setxattr` of a plain file).
    static func isNFSServer(_ pid: Int32) -> Bool { kind(pid) == .nfs }

    private static func kind(_ pid: Int32) -> Kind {
        guard pid > 0 else { return .none }
        let now = monotonicSeconds()
        if let known = recent.withLock({ $0[pid] }), known.until > now { return known.kind }
        let kind = lookUp(pid)
        recent.withLock { cache in
            if cache.count >= 1024 { cache.removeAll(keepingCapacity: true) }
            cache[pid] = (kind, now + 10)
        }
        return kind
    }

    private static func lookUp(_ pid: Int32) -> Kind {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        if n < 0 {
            // Gone already, or a kernel thread: only the latter has a status but no exe.
            return errno == ENOENT && access("/proc/\(pid)/status", F_OK) == 0 ? .nfs : .none
        }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let name = String(path.split(separator: "/").last ?? "")
        if nfsNames.contains(name) { return .nfs }
        return names.contains(name) ? .smb : .none
    }
}
