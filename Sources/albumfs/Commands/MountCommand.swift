import AlbumCore
import AlbumFSCore
import FuseBridge
import Foundation

enum MountCommand {
    static let command = Commands.Command(
        name: "mount", synopsis: "mount a library",
        help: """
            usage: albumfs mount LIBRARY MOUNTPOINT [-f] [-d] [-o OPTIONS]
                   albumfs LIBRARY MOUNTPOINT [-o OPTIONS]   (the form mount.fuse3 and fstab use)

            Mounts the library on MOUNTPOINT (an existing, empty folder) and serves it in
            the background until it is unmounted (fusermount3 -u MOUNTPOINT, umount) or
            the daemon gets SIGTERM or SIGINT.

              -f        stay in the foreground, log to stderr
              -d        debug: foreground, log every request
              -o OPTS   comma-separated mount options:
                  ro                    read-only: every change fails with EROFS
                  allow_other           let other users in (root, or user_allow_other in /etc/fuse.conf);
                                        the kernel then always enforces the modes (default_permissions),
                                        and the default umask is 027: the owner and the group, nobody else
                  default_permissions   the kernel enforces the modes below
                  uid=N, gid=N          owner of every file and folder (default: yours)
                  umask=NNN             octal bits taken away from every mode (default 022; 027 with allow_other)
                  thumbnail_size=N      longest side of .thumbnails/ images (default 256)
                  list_thumbnails       list each folder's .thumbnails/ (always reachable by path;
                                        unlisted by default, so that rsync, tar, find, du and
                                        Samba clients see photos only)
                  passthrough           the kernel reads photos from the library itself (FUSE
                                        passthrough: root, Linux 6.9 or later): reads as fast
                                        as the disk; the default for root
                  nopassthrough         reads through the daemon (the only way without root)
                  io_uring              requests through io_uring, served on the caller's CPU (Linux
                                        6.14 or later); the default whenever the kernel offers it,
                                        which it does once root sets the fuse module's enable_uring
                                        (echo Y > /sys/module/fuse/parameters/enable_uring)
                  noio_uring            requests through /dev/fuse even when io_uring is offered
                  host=NAME             this host's name, when several hosts serve one library from
                                        PostgreSQL (default: $ALBUMFS_HOST, else the machine's name);
                                        each host has its own lock and staging folder
                  log=PATH              log to PATH instead of syslog (or stderr with -f); without a
                                        syslog daemon, the log is LIBRARY/logs/albumfs.log
                  and mount(8)'s usual ones (noexec, noatime, ...). Set-id bits and device
                  files are never honoured: every mount is nosuid,nodev (suid and dev, which
                  fstab's defaults pass, are overruled).

            An fstab line: LIBRARY MOUNTPOINT fuse.albumfs defaults 0 0
            """,
        run: run)

    /// Options mount(8) and fstab pass that mean nothing to a FUSE daemon.
    static let ignored: Set<String> = ["defaults", "auto", "noauto", "user", "users", "nouser", "owner",
                                       "_netdev", "nofail", "relatime", "norelatime", "strictatime", "lazytime", "rw"]
    /// Options for libfuse and mount(2).
    static let kernel: Set<String> = ["allow_other", "allow_root", "default_permissions", "auto_unmount",
                                      "nosuid", "nodev", "exec", "noexec", "async", "sync",
                                      "dirsync", "atime", "noatime"]

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: ["-o"], flags: ["-f", "-d", "-s", "--help", "--foreground", "--debug"], command: "mount")
        let positionals = try Commands.positionals(args, ["LIBRARY", "MOUNTPOINT"], command: "mount")
        var request = MountRequest(library: absolutePath(positionals[0]), mountpoint: absolutePath(positionals[1]))
        request.debug = args.flags.contains("-d") || args.flags.contains("--debug")
        request.foreground = request.debug || args.flags.contains("-f") || args.flags.contains("--foreground")
        for list in args.options["-o"] ?? [] {
            for option in list.split(separator: ",").map(String.init) where !option.isEmpty {
                try apply(option, to: &request)
            }
        }
        do {
            try FuseMount.run(request)
        } catch let error as MountError {
            throw CommandError(message: error.description, code: Exit.failure)
        }
        return Exit.ok
    }

    static func apply(_ option: String, to request: inout MountRequest) throws {
        let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
        let key = parts[0], value = parts.count > 1 ? parts[1] : nil
        func number(_ radix: Int = 10) throws -> UInt32 {
            guard let value, let n = UInt32(value, radix: radix) else {
                let kind = radix == 8 ? "an octal number (digits 0 to 7, such as 027)" : "a number"
                throw CommandError.usage("mount option \(key) needs \(kind), got '\(value ?? "")'", command: "mount")
            }
            return n
        }
        switch key {
        case "ro": request.options.readOnly = true
        case "uid": request.options.uid = try number()
        case "gid": request.options.gid = try number()
        case "umask":
            let mask = try number(8)
            guard mask <= 0o777 else { throw CommandError.usage("umask must be octal, at most 777", command: "mount") }
            request.options.umask = mask
            request.umaskGiven = true
        case "suid", "dev":
            // mount(8) passes them for fstab's `defaults`: accepted, and overruled. Set-id
            // bits and device files mean nothing here: every mount is nosuid,nodev.
            break
        case "thumbnail_size":
            let size = try number()
            guard (16...4096).contains(size) else {
                throw CommandError.usage("thumbnail_size must be between 16 and 4096", command: "mount")
            }
            request.options.thumbnailSize = Int(size)
        case "list_thumbnails": request.options.listThumbnails = true
        case "nopassthrough": request.options.passthrough = false
        case "passthrough": request.options.passthrough = true
        case "io_uring": request.options.ioUring = true
        case "noio_uring": request.options.ioUring = false
        case "host":
            guard let value, (try? Library.hostName(value)) != nil else {
                throw CommandError.usage("host= needs a name of letters, digits, '.', '-' and '_'", command: "mount")
            }
            request.options.host = value
        case "log":
            guard let value, !value.isEmpty else { throw CommandError.usage("log= needs a path", command: "mount") }
            request.logPath = absolutePath(value)
        case "fsname", "subtype", "comment":
            break
        default:
            if key.hasPrefix("x-") || ignored.contains(key) { return }
            if kernel.contains(key) && value == nil {
                request.kernelOptions.append(key)
                return
            }
            throw CommandError.usage("unknown mount option '\(option)'", command: "mount")
        }
    }
}
