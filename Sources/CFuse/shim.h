#ifndef ALBUMFS_CFUSE_SHIM_H
#define ALBUMFS_CFUSE_SHIM_H
// Debian ships libfuse 3.14; with this version fuse_session_loop_mt and
// fuse_loop_cfg_create are real (versioned) symbols.
#define FUSE_USE_VERSION 314
#include <stddef.h>
#include <stdlib.h>
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <sys/file.h>
#include <fcntl.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>
#include <string.h>

// ---- What Swift cannot reach directly: macros, bitfields, and C structs built with
// initializer macros.

// A session from an argv (FUSE_ARGS_INIT is a macro).
static inline struct fuse_session *shim_session_new(int argc, char **argv,
        const struct fuse_lowlevel_ops *ops, void *userdata) {
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_session *se = fuse_session_new(&args, ops, sizeof(*ops), userdata);
    fuse_opt_free_args(&args);
    return se;
}

// Replies to a read with `size` bytes of `fd` at `pos`; libfuse splices them from the
// file into the device when it can, without a copy through user space.
static inline int shim_reply_fd(fuse_req_t req, int fd, off_t pos, size_t size) {
    struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
    buf.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    buf.buf[0].fd = fd;
    buf.buf[0].pos = pos;
    return fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static inline void shim_fi_set_open_flags(struct fuse_file_info *fi, uint64_t fh,
        int keep_cache, int direct_io, int cache_readdir) {
    fi->fh = fh;
    fi->keep_cache = keep_cache ? 1 : 0;
    fi->direct_io = direct_io ? 1 : 0;
    fi->cache_readdir = cache_readdir ? 1 : 0;
}

// A file opened only to be read has nothing to do at close: no FLUSH round trip.
static inline void shim_fi_set_noflush(struct fuse_file_info *fi, int noflush) {
    fi->noflush = noflush ? 1 : 0;
}

static inline uint64_t shim_fi_fh(const struct fuse_file_info *fi) { return fi ? fi->fh : 0; }
static inline int shim_fi_flags(const struct fuse_file_info *fi) { return fi ? fi->flags : 0; }

// What AlbumFS asks of the kernel at INIT: NFS export (lookups of "." and ".."),
// splice for reads, readdirplus, 1 MiB requests, nanosecond times.
static inline void shim_configure_conn(struct fuse_conn_info *conn, unsigned max_write, unsigned max_readahead) {
    unsigned want = FUSE_CAP_EXPORT_SUPPORT | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE
                  | FUSE_CAP_READDIRPLUS | FUSE_CAP_ASYNC_READ
                  | FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_ATOMIC_O_TRUNC;
    conn->want |= want & conn->capable;
    // Locks stay in the kernel: flock and fcntl locks work between local processes.
    conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS | FUSE_CAP_WRITEBACK_CACHE);
    // Always readdirplus (not the kernel's adaptive choice): a listing brings every
    // entry's attributes, so `du` and `ls -l` on a cold cache need no lookup per file.
    conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
    if (max_write) conn->max_write = max_write;
    if (max_readahead && max_readahead < conn->max_readahead) conn->max_readahead = max_readahead;
    conn->time_gran = 1;
}

// ---- FUSE passthrough (kernel 6.9+): the kernel reads a file's backing file itself,
// page cache included, and the daemon sees no READ. libfuse 3.14 predates it: its open
// reply cannot carry a backing id, so these build it by hand; the INIT reply that asks
// for passthrough is in the CFuseInit target. Constants are the kernel's
// (include/uapi/linux/fuse.h, protocol 7.40); Debian 12's linux-libc-dev is older.

#define ALBUMFS_FOPEN_NOFLUSH (1u << 5)
#define ALBUMFS_FOPEN_PASSTHROUGH (1u << 7)

struct albumfs_backing_map { int32_t fd; uint32_t flags; uint64_t padding; };
#define ALBUMFS_DEV_IOC_BACKING_OPEN _IOW(229, 1, struct albumfs_backing_map)
#define ALBUMFS_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

// FUSE_NOTIFY_INC_EPOCH (protocol 7.44, Linux 6.16): every name the kernel cached
// before it is looked up again at its next use. libfuse 3.14 has no call for it; a
// notification is a bare header written to the device (unique 0, the code as error).
// Returns 0, or -errno (EINVAL from a kernel without it).
#define ALBUMFS_NOTIFY_INC_EPOCH 8
struct albumfs_out_header { uint32_t len; int32_t error; uint64_t unique; };

static inline int shim_notify_inc_epoch(struct fuse_session *se) {
    struct albumfs_out_header out = { sizeof(out), ALBUMFS_NOTIFY_INC_EPOCH, 0 };
    return write(fuse_session_fd(se), &out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : -errno;
}

// Registers `file` as a backing file; returns its id (> 0), or -1 with errno.
static inline int shim_backing_open(struct fuse_session *se, int file) {
    struct albumfs_backing_map map = { file, 0, 0 };
    return ioctl(fuse_session_fd(se), ALBUMFS_DEV_IOC_BACKING_OPEN, &map);
}

static inline int shim_backing_close(struct fuse_session *se, int32_t id) {
    uint32_t value = (uint32_t)id;
    return ioctl(fuse_session_fd(se), ALBUMFS_DEV_IOC_BACKING_CLOSE, &value);
}

// An open reply whose reads the kernel serves from backing file `backing_id`.
static inline int shim_reply_open_passthrough(fuse_req_t req, uint64_t fh, int32_t backing_id, int noflush) {
    struct { uint64_t fh; uint32_t open_flags; int32_t backing_id; } out;
    out.fh = fh;
    out.open_flags = ALBUMFS_FOPEN_PASSTHROUGH | (noflush ? ALBUMFS_FOPEN_NOFLUSH : 0);
    out.backing_id = backing_id;
    struct iovec iov = { &out, sizeof out };
    return fuse_reply_iov(req, &iov, 1);
}

// prctl is variadic: the daemon of a test gets `sig` when its parent goes.
static inline int shim_exit_with_parent(int sig) { return prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0, 0, 0); }

// The multi-threaded loop with its configuration.
static inline int shim_loop_mt(struct fuse_session *se, int clone_fd, unsigned max_idle, unsigned max_threads) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (!config) return -1;
    fuse_loop_cfg_set_clone_fd(config, clone_fd);
    fuse_loop_cfg_set_idle_threads(config, max_idle);
    fuse_loop_cfg_set_max_threads(config, max_threads);
    int rc = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return rc;
}

#endif
