// The kernel's INIT, answered by AlbumFS rather than by libfuse's loop.
//
// Why: libfuse 3.14 builds the INIT reply from what it knows, and it knows neither
// FUSE passthrough (kernel 6.9) nor, on this kernel, how to keep FUSE_PARALLEL_DIROPS
// in the reply (measured: the flag is in `want` but not in the reply, so the kernel
// runs every lookup of a folder one after another, and one slow thumbnail stalls every
// lookup beside it). So libfuse handles the request as it always does (its state, our
// init callback) while its reply is diverted into a pipe; the reply is then amended
// here and written to the kernel. Runs before any worker thread exists: nothing else
// reads or writes the device meanwhile.
//
// Layouts are the kernel's (include/uapi/linux/fuse.h, protocol 7.40); Debian 12's
// linux-libc-dev is older than they are, so they are spelled out here.
#define _GNU_SOURCE
#define FUSE_USE_VERSION 314
#include "fuse_init.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <fuse_lowlevel.h>

#define ALBUMFS_FUSE_OPCODE_INIT 26
#define ALBUMFS_FUSE_PARALLEL_DIROPS (1u << 18)
#define ALBUMFS_FUSE_HANDLE_KILLPRIV_V2 (1u << 28)
#define ALBUMFS_FUSE_INIT_EXT (1u << 30)
#define ALBUMFS_FUSE_PASSTHROUGH_FLAGS2 (1u << 5)   // FUSE_PASSTHROUGH, bit 37 of 64
#define ALBUMFS_FUSE_OVER_IO_URING_FLAGS2 (1u << 9)  // FUSE_OVER_IO_URING, bit 41 of 64

struct albumfs_in_header {
    uint32_t len, opcode;
    uint64_t unique, nodeid;
    uint32_t uid, gid, pid;
    uint16_t total_extlen, padding;
};
// Kernels before 7.36 send only the first four fields.
struct albumfs_init_in { uint32_t major, minor, max_readahead, flags, flags2, unused[11]; };
struct albumfs_out_header { uint32_t len; int32_t error; uint64_t unique; };
struct albumfs_init_out {
    uint32_t major, minor, max_readahead, flags;
    uint16_t max_background, congestion_threshold;
    uint32_t max_write, time_gran;
    uint16_t max_pages, map_alignment;
    uint32_t flags2, max_stack_depth;
    uint32_t unused[6];
};
_Static_assert(sizeof(struct albumfs_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct albumfs_init_out) == 64, "fuse_init_out");
_Static_assert(offsetof(struct albumfs_init_out, flags2) == 32, "fuse_init_out.flags2");

int albumfs_answer_init(struct fuse_session *se, int want_passthrough, int want_uring, int test_fault,
                        size_t *max_payload) {
    int fd = fuse_session_fd(se);
    // The kernel refuses reads smaller than its largest request; INIT itself is small.
    size_t size = 1 << 21;
    char *in = malloc(size);
    if (!in) return ALBUMFS_INIT_FAILED;
    ssize_t n;
    do { n = read(fd, in, size); } while (n < 0 && errno == EINTR);
    const struct albumfs_in_header *header = (const struct albumfs_in_header *)in;
    if (n < (ssize_t)sizeof *header + 16 || header->opcode != ALBUMFS_FUSE_OPCODE_INIT) {
        int e = n < 0 ? errno : EPROTO;
        free(in);
        errno = e;
        return ALBUMFS_INIT_FAILED;
    }
    struct albumfs_init_in init_in;
    memset(&init_in, 0, sizeof init_in);
    size_t in_size = (size_t)n - sizeof *header;
    memcpy(&init_in, in + sizeof *header, in_size < sizeof init_in ? in_size : sizeof init_in);
    if (!(init_in.flags & ALBUMFS_FUSE_INIT_EXT)) init_in.flags2 = 0;

    // Divert the device into a pipe while libfuse answers.
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) { int e = errno; free(in); errno = e; return ALBUMFS_INIT_FAILED; }
    int saved = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (saved < 0 || dup3(pipefd[1], fd, O_CLOEXEC) < 0) {
        int e = errno;
        if (saved >= 0) close(saved);
        close(pipefd[0]); close(pipefd[1]); free(in);
        errno = e;
        return ALBUMFS_INIT_FAILED;
    }
    struct fuse_buf buf;
    memset(&buf, 0, sizeof buf);
    buf.size = (size_t)n;
    buf.mem = in;
    fuse_session_process_buf(se, &buf);
    int restored = dup3(test_fault == ALBUMFS_INIT_FAULT_RESTORE ? -1 : saved, fd, O_CLOEXEC);
    int restore_errno = errno;
    close(saved);
    close(pipefd[1]);
    free(in);
    if (restored < 0) {
        // The session's descriptor is the pipe now: nothing more can be served. It is
        // turned into /dev/null, or libfuse's unmount would see the pipe's error, take
        // it for a severed device and leave the mount behind (closing it instead would
        // let libfuse close whatever reuses the number later).
        close(pipefd[0]);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup3(null, fd, O_CLOEXEC) < 0) close(fd);
        if (null >= 0) close(null);
        errno = restore_errno;
        return ALBUMFS_INIT_FAILED;
    }

    char out[sizeof(struct albumfs_out_header) + sizeof(struct albumfs_init_out) + 64];
    ssize_t m;
    do { m = read(pipefd[0], out, sizeof out); } while (m < 0 && errno == EINTR);
    int read_errno = errno;
    close(pipefd[0]);
    if (m < (ssize_t)sizeof(struct albumfs_out_header)) {
        errno = m < 0 ? read_errno : EPROTO;
        return ALBUMFS_INIT_FAILED;
    }
    struct albumfs_out_header *out_header = (struct albumfs_out_header *)out;
    if (test_fault == ALBUMFS_INIT_FAULT_REPLY) {
        out_header->error = -EPROTO;
        out_header->len = (uint32_t)sizeof *out_header;
        m = (ssize_t)sizeof *out_header;
    }
    int result = ALBUMFS_INIT_DONE;
    int complete = out_header->error == 0
        && m >= (ssize_t)(sizeof *out_header + offsetof(struct albumfs_init_out, unused));
    if (complete) {
        struct albumfs_init_out reply;
        memcpy(&reply, out + sizeof *out_header, sizeof reply < (size_t)m - sizeof *out_header
               ? sizeof reply : (size_t)m - sizeof *out_header);
        // Lookups and listings of one folder run side by side (libfuse asked, see above).
        if (init_in.flags & ALBUMFS_FUSE_PARALLEL_DIROPS) reply.flags |= ALBUMFS_FUSE_PARALLEL_DIROPS;
        // The daemon clears set-id bits itself (it never keeps them) and stores no
        // security.* attribute: the kernel need not ask for security.capability before
        // every write (with this flag the mount is SB_NOSEC: an inode found without
        // privileges to drop is not asked again). Two GETXATTR requests fewer per file
        // that cp writes.
        if (init_in.flags & ALBUMFS_FUSE_HANDLE_KILLPRIV_V2) reply.flags |= ALBUMFS_FUSE_HANDLE_KILLPRIV_V2;
        if (want_passthrough && init_in.minor >= 40 && (init_in.flags2 & ALBUMFS_FUSE_PASSTHROUGH_FLAGS2)) {
            reply.flags |= ALBUMFS_FUSE_INIT_EXT;
            reply.flags2 |= ALBUMFS_FUSE_PASSTHROUGH_FLAGS2;
            // Backing files must be on a filesystem that stacks on nothing (ext4, xfs).
            reply.max_stack_depth = 1;
            result |= ALBUMFS_INIT_PASSTHROUGH;
        }
        // The kernel offers io_uring only when its fuse module allows it; once asked
        // for, it holds every request until the ring's queues are registered (or a
        // registration fails), so the caller asks only with its rings made.
        if (want_uring && init_in.minor >= 42 && (init_in.flags2 & ALBUMFS_FUSE_OVER_IO_URING_FLAGS2)) {
            reply.flags |= ALBUMFS_FUSE_INIT_EXT;
            reply.flags2 |= ALBUMFS_FUSE_OVER_IO_URING_FLAGS2;
            result |= ALBUMFS_INIT_URING;
        }
        // The largest request or reply body: what each ring entry's payload must hold
        // (the kernel's own rule: max_write, max_pages pages, at least 8 KiB).
        size_t pages = (size_t)(reply.max_pages ? reply.max_pages : 32) * (size_t)sysconf(_SC_PAGESIZE);
        size_t largest = reply.max_write > pages ? reply.max_write : pages;
        if (max_payload) *max_payload = largest > 8192 ? largest : 8192;
        memcpy(out + sizeof *out_header, &reply, offsetof(struct albumfs_init_out, unused));
    }
    ssize_t w;
    do { w = write(fd, out, (size_t)m); } while (w < 0 && errno == EINTR);
    if (w != m) return ALBUMFS_INIT_FAILED;
    if (out_header->error != 0) { errno = EPROTO; return ALBUMFS_INIT_FAILED; }
    return result;
}
