// FUSE over io_uring, put under libfuse 3.14.
//
// Why: with /dev/fuse, every request wakes a daemon thread that sleeps on whatever CPU
// it last ran on, and every reply wakes the caller back; on a virtual machine each of
// those wake-ups of an idle vCPU is most of a round trip (docs/performance.md). With
// io_uring the kernel puts a request into the queue of the CPU its caller runs on, and
// the thread serving that queue is bound to the same CPU: the caller sleeps, the
// server runs in its place, and the reply wakes the caller there.
//
// How: libfuse 3.14 predates io_uring, but it processes a request from any buffer
// (fuse_session_process_buf) and sends every reply through a custom I/O hook
// (fuse_session_custom_io). A serving thread rebuilds the request as /dev/fuse would
// have delivered it (header, the operation's own header, then the payload, in one
// buffer) right in front of the entry's payload, so no payload byte is copied, and
// libfuse handles it as usual. The hook sends a reply to a ring request back through
// its entry (COMMIT_AND_FETCH, which also asks for the next request); every other
// message (replies to requests that came through /dev/fuse, notifications) is written
// to /dev/fuse as before. The kernel keeps sending FORGET and INTERRUPT through
// /dev/fuse, so libfuse's own loop keeps running beside the ring.
//
// An entry's commit is always submitted by the thread that owns its io_uring (the
// kernel hands that entry's next request to the thread that submitted the commit). A
// reply made on another thread (a deferred one: a thumbnail that was being made) is
// copied into the entry there, and its owner is woken through an eventfd to submit it.
//
// Layouts are the kernel's (include/uapi/linux/fuse.h, protocol 7.42); Debian 12's
// linux-libc-dev predates them, so they are spelled out here.
#define _GNU_SOURCE
#define FUSE_USE_VERSION 314
#include "fuse_ring.h"
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <fuse_lowlevel.h>

struct ring_in_header {
    uint32_t len, opcode;
    uint64_t unique, nodeid;
    uint32_t uid, gid, pid;
    uint16_t total_extlen, padding;
};
struct ring_out_header { uint32_t len; int32_t error; uint64_t unique; };
struct ring_ent_in_out { uint64_t flags, commit_id; uint32_t payload_sz, padding; uint64_t reserved; };
struct ring_req_header {
    char in_out[128];   // fuse_in_header from the kernel, fuse_out_header to it
    char op_in[128];    // the operation's own header (the request's first argument)
    struct ring_ent_in_out ent;
};
struct ring_cmd_req { uint64_t flags, commit_id; uint16_t qid; uint8_t padding[6]; };
enum { RING_CMD_REGISTER = 1, RING_CMD_COMMIT_AND_FETCH = 2 };
_Static_assert(sizeof(struct ring_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct ring_out_header) == 16, "fuse_out_header");
_Static_assert(sizeof(struct ring_req_header) == 288, "fuse_uring_req_header");
_Static_assert(sizeof(struct ring_cmd_req) == 24, "fuse_uring_cmd_req");

// Room in front of each payload for the two headers a request is rebuilt with; a page,
// so that the payload itself stays page-aligned.
#define RING_PREFIX 4096
// Serving threads per CPU, and entries per thread. The kernel gives a request to any
// free entry of its CPU's queue, and a thread serves its entries one at a time, so
// what may wait for the disk (a close that commits a photo, an fsync) is handed to the
// pool below rather than served in place, where it would hold up the requests behind
// it. Requests answered later (one that waits for a thumbnail) keep their entry until
// then: each thread holds many, whose payload pages are taken only when used.
#define RING_THREADS_PER_CPU 2
#define RING_ENTRIES_PER_THREAD 16
// Threads that serve the requests that may wait for the disk: as many as libfuse's own
// loop may run, so that reads of files not in the page cache keep the disk as busy.
#define RING_SLOW_THREADS 16
// Opcodes (include/uapi/linux/fuse.h) that may wait for the disk. A READ reaches the
// daemon only when the kernel does not read the blob itself (no passthrough) and has
// not the pages (a cold read): it waits for the disk.
#define RING_OP_READ 15
#define RING_OP_RELEASE 18
#define RING_OP_FSYNC 20
#define RING_OP_FLUSH 25
#define RING_OP_FSYNCDIR 30
#define RING_EVENT_TAG 1ULL

struct ring_thread;

struct ring_entry {
    struct ring_thread *owner;
    struct ring_req_header *headers;
    char *area;                    // RING_PREFIX bytes, then the payload
    struct iovec iov[2];
    _Atomic uint64_t unique;       // the request being served; 0 when none
    _Atomic int reply_ready;       // a reply copied in by another thread waits for its commit
    struct fuse_buf request;       // the rebuilt request, while the slow pool has it in line
    struct ring_entry *next_slow;  // the slow pool's line
};

struct ring_thread {
    struct albumfs_ring *ring;
    struct io_uring uring;
    int uring_ready;
    int cpu;
    int event_fd;
    uint64_t event_value;
    pthread_t thread;
    int started;
    struct ring_entry entries[RING_ENTRIES_PER_THREAD];
    int live;
};

struct albumfs_ring {
    struct fuse_session *se;
    pthread_mutex_t slow_lock;
    pthread_cond_t slow_ready;
    struct ring_entry *slow_first, *slow_last;   // requests in line for the slow pool
    pthread_t slow[RING_SLOW_THREADS];
    int slow_started;
    int dev_fd;
    unsigned n_threads;
    struct ring_thread *threads;
    size_t payload;
    _Atomic int stopping;
    _Atomic unsigned long served;
    _Atomic int refused;
};

// The ring libfuse's I/O hook reaches (one mount per process).
static struct albumfs_ring *installed;
// The ring thread serving on this thread, if any.
static __thread struct ring_thread *serving;
// Whether this thread is handling a request that came through the ring (inline or in
// the slow pool): its reply is copied into the entry the request arrived in.
static __thread int in_ring_request;

int albumfs_ring_in_request(void) { return in_ring_request; }

int albumfs_ring_offered(void) {
    int fd = open("/sys/module/fuse/parameters/enable_uring", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char c = 0;
    ssize_t n = read(fd, &c, 1);
    close(fd);
    return n == 1 && (c == 'Y' || c == 'y' || c == '1');
}

// The kernel makes one queue per possible CPU, and uses the ring only once every
// queue has an entry.
static unsigned possible_cpus(void) {
    FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
    unsigned last = 0;
    if (f) {
        char line[256];
        if (fgets(line, sizeof line, f)) {
            // "0-3" or "0-3,5-7": the last number is the highest CPU.
            for (char *p = line; *p;) {
                if (*p < '0' || *p > '9') { p++; continue; }
                char *end;
                last = (unsigned)strtoul(p, &end, 10);
                p = end;
            }
        }
        fclose(f);
    }
    return last + 1;
}

struct albumfs_ring *albumfs_ring_prepare(struct fuse_session *se) {
    unsigned cpus = possible_cpus();
    struct albumfs_ring *ring = calloc(1, sizeof *ring);
    if (!ring) return NULL;
    ring->se = se;
    pthread_mutex_init(&ring->slow_lock, NULL);
    pthread_cond_init(&ring->slow_ready, NULL);
    ring->dev_fd = fuse_session_fd(se);
    ring->n_threads = cpus * RING_THREADS_PER_CPU;
    ring->threads = calloc(ring->n_threads, sizeof *ring->threads);
    if (!ring->threads) { albumfs_ring_discard(ring); errno = ENOMEM; return NULL; }
    // Every thread's before any is made: a failure part way discards them all.
    for (unsigned i = 0; i < ring->n_threads; i++) ring->threads[i].event_fd = -1;
    for (unsigned i = 0; i < ring->n_threads; i++) {
        struct ring_thread *t = &ring->threads[i];
        t->ring = ring;
        t->cpu = (int)(i / RING_THREADS_PER_CPU);
        struct io_uring_params params;
        memset(&params, 0, sizeof params);
        // The commands carry their arguments in the big SQE's extra bytes. Only the
        // serving thread submits (it enables the ring), and the kernel's work for it
        // runs when it waits for its next request, not as a signal that interrupts it.
        params.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN
            | IORING_SETUP_R_DISABLED;
        int rc = io_uring_queue_init_params(RING_ENTRIES_PER_THREAD * 2 + 4, &t->uring, &params);
        if (rc < 0) { albumfs_ring_discard(ring); errno = -rc; return NULL; }
        t->uring_ready = 1;
        t->event_fd = eventfd(0, EFD_CLOEXEC);
        if (t->event_fd < 0) { int e = errno; albumfs_ring_discard(ring); errno = e; return NULL; }
    }
    return ring;
}

void albumfs_ring_discard(struct albumfs_ring *ring) {
    if (!ring) return;
    for (unsigned i = 0; ring->threads && i < ring->n_threads; i++) {
        struct ring_thread *t = &ring->threads[i];
        if (t->uring_ready) io_uring_queue_exit(&t->uring);
        if (t->event_fd >= 0) close(t->event_fd);
        for (int k = 0; k < RING_ENTRIES_PER_THREAD; k++) {
            struct ring_entry *e = &t->entries[k];
            free(e->headers);
            if (e->area) munmap(e->area, RING_PREFIX + ring->payload);
        }
    }
    free(ring->threads);
    pthread_mutex_destroy(&ring->slow_lock);
    pthread_cond_destroy(&ring->slow_ready);
    free(ring);
}

unsigned long albumfs_ring_served(const struct albumfs_ring *ring) {
    return ring ? atomic_load(&ring->served) : 0;
}

int albumfs_ring_refused(const struct albumfs_ring *ring) {
    return ring ? atomic_load(&ring->refused) : 0;
}

// ---- submissions (only ever by the entry's owner thread)

static struct io_uring_sqe *next_sqe(struct ring_thread *t) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&t->uring);
    if (!sqe) {
        // The submission queue is sized for every entry twice over; submit and retry.
        io_uring_submit(&t->uring);
        sqe = io_uring_get_sqe(&t->uring);
    }
    return sqe;
}

static void prep_command(struct ring_thread *t, struct ring_entry *e, uint32_t op, uint64_t commit_id) {
    struct io_uring_sqe *sqe = next_sqe(t);
    if (!sqe) return;
    memset(sqe, 0, 2 * sizeof *sqe);   // SQE128: the command area follows the SQE
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = t->ring->dev_fd;
    sqe->cmd_op = op;
    sqe->addr = (uint64_t)(uintptr_t)e->iov;
    sqe->len = 2;
    sqe->user_data = (uint64_t)(uintptr_t)e;
    struct ring_cmd_req *cmd = (struct ring_cmd_req *)sqe->cmd;
    cmd->commit_id = commit_id;
    cmd->qid = (uint16_t)t->cpu;
}

static void arm_event(struct ring_thread *t) {
    struct io_uring_sqe *sqe = next_sqe(t);
    if (!sqe) return;
    io_uring_prep_read(sqe, t->event_fd, &t->event_value, sizeof t->event_value, 0);
    sqe->user_data = RING_EVENT_TAG;
}

// ---- replies (libfuse's I/O hook)

static struct ring_entry *entry_serving(struct albumfs_ring *ring, uint64_t unique) {
    if (unique == 0) return NULL;
    for (unsigned i = 0; i < ring->n_threads; i++) {
        struct ring_thread *t = &ring->threads[i];
        for (int k = 0; k < RING_ENTRIES_PER_THREAD; k++) {
            uint64_t expected = unique;
            // Claimed once: a second reply to the same request finds nothing.
            if (atomic_compare_exchange_strong(&t->entries[k].unique, &expected, 0)) return &t->entries[k];
        }
    }
    return NULL;
}

// Has entry `e`'s reply (already in its header and payload) committed: by this thread
// if it owns the entry, else by its owner, woken for it.
static void commit_reply(struct ring_entry *e, uint64_t unique) {
    struct ring_thread *owner = e->owner;
    if (serving == owner) {
        prep_command(owner, e, RING_CMD_COMMIT_AND_FETCH, unique);
        return;
    }
    e->headers->ent.commit_id = unique;
    atomic_store_explicit(&e->reply_ready, 1, memory_order_release);
    uint64_t one = 1;
    ssize_t w;
    do { w = write(owner->event_fd, &one, sizeof one); } while (w < 0 && errno == EINTR);
}

// Copies a reply (its out header first) into entry `e` and has it committed.
static ssize_t reply_through_ring(struct ring_entry *e, const struct iovec *iov, int count) {
    struct albumfs_ring *ring = e->owner->ring;
    char *header = e->headers->in_out;
    size_t header_left = sizeof(struct ring_out_header), body = 0, total = 0;
    for (int i = 0; i < count; i++) {
        const char *p = iov[i].iov_base;
        size_t n = iov[i].iov_len;
        total += n;
        if (header_left) {
            size_t take = n < header_left ? n : header_left;
            memcpy(header + sizeof(struct ring_out_header) - header_left, p, take);
            header_left -= take;
            p += take;
            n -= take;
        }
        if (n) {
            if (body + n > ring->payload) {
                // Larger than the kernel allows for any reply: say so instead.
                struct ring_out_header *out = (struct ring_out_header *)header;
                out->error = -EIO;
                out->len = sizeof *out;
                body = 0;
                break;
            }
            memcpy(e->area + RING_PREFIX + body, p, n);
            body += n;
        }
    }
    e->headers->ent.payload_sz = (uint32_t)body;
    commit_reply(e, ((struct ring_out_header *)header)->unique);
    return (ssize_t)total;
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata) {
    (void)userdata;
    struct albumfs_ring *ring = installed;
    if (ring && count > 0 && iov[0].iov_len >= sizeof(struct ring_out_header)) {
        const struct ring_out_header *out = iov[0].iov_base;
        struct ring_entry *e = entry_serving(ring, out->unique);
        if (e) return reply_through_ring(e, iov, count);
    }
    return writev(fd, iov, count);
}

static ssize_t hook_read(int fd, void *buf, size_t len, void *userdata) {
    (void)userdata;
    return read(fd, buf, len);
}

static int read_full(int fd, void *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { if (n == 0) errno = EIO; return -1; }
        got += (size_t)n;
    }
    return 0;
}

// libfuse splices a read's bytes into a pipe and the pipe into the device; a ring
// reply is read from the pipe straight into its entry's payload instead.
static ssize_t hook_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                                unsigned int flags, void *userdata) {
    (void)offin; (void)offout; (void)flags; (void)userdata;
    struct ring_out_header out;
    if (len < sizeof out || read_full(fdin, &out, sizeof out) != 0) return -1;
    size_t body = len - sizeof out;
    struct albumfs_ring *ring = installed;
    struct ring_entry *e = ring ? entry_serving(ring, out.unique) : NULL;
    if (e) {
        if (body > ring->payload || read_full(fdin, e->area + RING_PREFIX, body) != 0) {
            out.error = -EIO;
            out.len = sizeof out;
            body = 0;
        }
        memcpy(e->headers->in_out, &out, sizeof out);
        e->headers->ent.payload_sz = (uint32_t)body;
        commit_reply(e, out.unique);
        return (ssize_t)len;
    }
    // Not a ring request: written to the device as it came.
    char *buffer = malloc(len);
    if (!buffer) { errno = ENOMEM; return -1; }
    memcpy(buffer, &out, sizeof out);
    ssize_t rc = -1;
    if (read_full(fdin, buffer + sizeof out, body) == 0) {
        struct iovec iov = { .iov_base = buffer, .iov_len = len };
        rc = writev(fdout, &iov, 1);
    }
    free(buffer);
    return rc;
}

static int start_threads(struct albumfs_ring *ring, size_t max_payload);
static void refuse_registration(struct albumfs_ring *ring);

// ---- serving

// Rebuilds the request in front of its payload and lets libfuse handle it.
static void serve(struct ring_thread *t, struct ring_entry *e) {
    struct albumfs_ring *ring = t->ring;
    struct ring_in_header in;
    memcpy(&in, e->headers->in_out, sizeof in);
    size_t payload = e->headers->ent.payload_sz;
    size_t op_size = in.len >= sizeof in + payload ? in.len - sizeof in - payload : SIZE_MAX;
    if (op_size > sizeof e->headers->op_in || payload > ring->payload) {
        // Not a request this code understands: answer it with an error, never hang it.
        struct ring_out_header out = { .len = sizeof out, .error = -EIO, .unique = in.unique };
        memcpy(e->headers->in_out, &out, sizeof out);
        e->headers->ent.payload_sz = 0;
        prep_command(t, e, RING_CMD_COMMIT_AND_FETCH, in.unique);
        return;
    }
    char *start = e->area + RING_PREFIX - op_size - sizeof in;
    memcpy(start, &in, sizeof in);
    memcpy(start + sizeof in, e->headers->op_in, op_size);
    struct fuse_buf buf;
    memset(&buf, 0, sizeof buf);
    buf.size = in.len;
    buf.mem = start;
    atomic_store(&e->unique, in.unique);
    atomic_fetch_add(&ring->served, 1);
    if (in.opcode == RING_OP_READ || in.opcode == RING_OP_FLUSH || in.opcode == RING_OP_FSYNC
        || in.opcode == RING_OP_RELEASE || in.opcode == RING_OP_FSYNCDIR) {
        // The entry is the request's until its reply: it waits in line as it is.
        e->request = buf;
        e->next_slow = NULL;
        pthread_mutex_lock(&ring->slow_lock);
        if (ring->slow_last) ring->slow_last->next_slow = e; else ring->slow_first = e;
        ring->slow_last = e;
        pthread_cond_signal(&ring->slow_ready);
        pthread_mutex_unlock(&ring->slow_lock);
        return;
    }
    serving = t;
    in_ring_request = 1;
    fuse_session_process_buf(ring->se, &buf);
    in_ring_request = 0;
    serving = NULL;
}

// The slow pool: serves what may wait for the disk; its replies are handed to the
// entries' owners. Ends when the ring stops and nothing is left in line.
static void *slow_main(void *arg) {
    struct albumfs_ring *ring = arg;
    for (;;) {
        pthread_mutex_lock(&ring->slow_lock);
        while (!ring->slow_first && !atomic_load(&ring->stopping)) pthread_cond_wait(&ring->slow_ready, &ring->slow_lock);
        struct ring_entry *e = ring->slow_first;
        if (e) {
            ring->slow_first = e->next_slow;
            if (!ring->slow_first) ring->slow_last = NULL;
        }
        pthread_mutex_unlock(&ring->slow_lock);
        if (!e) return NULL;
        in_ring_request = 1;
        fuse_session_process_buf(ring->se, &e->request);
        in_ring_request = 0;
    }
}

// Commits replies other threads copied into this thread's entries.
static void commit_handed_over(struct ring_thread *t) {
    for (int k = 0; k < RING_ENTRIES_PER_THREAD; k++) {
        struct ring_entry *e = &t->entries[k];
        if (atomic_exchange_explicit(&e->reply_ready, 0, memory_order_acquire)) {
            prep_command(t, e, RING_CMD_COMMIT_AND_FETCH, e->headers->ent.commit_id);
        }
    }
}

static void *thread_main(void *arg) {
    struct ring_thread *t = arg;
    struct albumfs_ring *ring = t->ring;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(t->cpu, &set);
    // An offline CPU cannot be bound to; its queue is then served from anywhere.
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    // liburing 2.3 declares io_uring_enable_rings but does not export it. A ring that
    // cannot be enabled can register nothing: the kernel is told so, or it would hold
    // every request for a queue that never comes.
    if (syscall(__NR_io_uring_register, t->uring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0) {
        atomic_store(&ring->refused, errno);
        refuse_registration(ring);
        return NULL;
    }
    for (int k = 0; k < RING_ENTRIES_PER_THREAD; k++) {
        prep_command(t, &t->entries[k], RING_CMD_REGISTER, 0);
    }
    t->live = RING_ENTRIES_PER_THREAD;
    arm_event(t);
    io_uring_submit(&t->uring);
    while (t->live > 0 && !atomic_load(&ring->stopping)) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&t->uring, &cqe);
        if (rc == -EINTR) continue;
        if (rc < 0) break;
        uint64_t tag = cqe->user_data;
        int res = cqe->res;
        io_uring_cqe_seen(&t->uring, cqe);
        if (tag == RING_EVENT_TAG) {
            if (atomic_load(&ring->stopping)) break;
            commit_handed_over(t);
            arm_event(t);
        } else {
            struct ring_entry *e = (struct ring_entry *)(uintptr_t)tag;
            if (res < 0) {
                // The registration was refused (the kernel then serves every request
                // through /dev/fuse), or the connection ends (ENOTCONN at unmount).
                if (res != -ENOTCONN && res != -ECANCELED && atomic_load(&ring->served) == 0) {
                    atomic_store(&ring->refused, -res);
                }
                t->live--;
                continue;
            }
            serve(t, e);
        }
        io_uring_submit(&t->uring);
    }
    return NULL;
}

// Tells the kernel that the ring will not come: a registration it must refuse (no
// buffers), after which it sets the connection's io_uring aside and serves every
// request through /dev/fuse. Without it, the requests it holds for the ring would wait
// forever. On an io_uring of its own, since serving threads may be submitting to theirs.
static void refuse_registration(struct albumfs_ring *ring) {
    struct io_uring uring;
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    params.flags = IORING_SETUP_SQE128;
    if (io_uring_queue_init_params(2, &uring, &params) < 0) return;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&uring);
    if (sqe) {
        memset(sqe, 0, 2 * sizeof *sqe);
        sqe->opcode = IORING_OP_URING_CMD;
        sqe->fd = ring->dev_fd;
        sqe->cmd_op = RING_CMD_REGISTER;
        sqe->len = 0;   // the kernel wants two buffers: EINVAL
        io_uring_submit(&uring);
        struct io_uring_cqe *cqe;
        if (io_uring_wait_cqe(&uring, &cqe) == 0) io_uring_cqe_seen(&uring, cqe);
    }
    io_uring_queue_exit(&uring);
}

int albumfs_ring_start(struct albumfs_ring *ring, size_t max_payload) {
    int rc = start_threads(ring, max_payload);
    if (rc != 0) {
        int e = errno;
        refuse_registration(ring);
        errno = e;
    }
    return rc;
}

static int start_threads(struct albumfs_ring *ring, size_t max_payload) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    ring->payload = (max_payload + page - 1) / page * page;
    for (unsigned i = 0; i < ring->n_threads; i++) {
        struct ring_thread *t = &ring->threads[i];
        for (int k = 0; k < RING_ENTRIES_PER_THREAD; k++) {
            struct ring_entry *e = &t->entries[k];
            e->owner = t;
            e->headers = aligned_alloc(64, sizeof *e->headers);
            // Pages are taken only when a request uses them.
            void *area = mmap(NULL, RING_PREFIX + ring->payload, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (!e->headers || area == MAP_FAILED) { errno = ENOMEM; return -1; }
            memset(e->headers, 0, sizeof *e->headers);
            e->area = area;
            e->iov[0] = (struct iovec){ .iov_base = e->headers, .iov_len = sizeof *e->headers };
            e->iov[1] = (struct iovec){ .iov_base = e->area + RING_PREFIX, .iov_len = ring->payload };
        }
    }
    static const struct fuse_custom_io io = {
        .writev = hook_writev,
        .read = hook_read,
        .splice_send = hook_splice_send,
    };
    if (fuse_session_custom_io(ring->se, &io, ring->dev_fd) != 0) { errno = EINVAL; return -1; }
    installed = ring;
    for (int i = 0; i < RING_SLOW_THREADS; i++) {
        int rc = pthread_create(&ring->slow[i], NULL, slow_main, ring);
        if (rc != 0) { errno = rc; return -1; }
        ring->slow_started = i + 1;
    }
    for (unsigned i = 0; i < ring->n_threads; i++) {
        struct ring_thread *t = &ring->threads[i];
        int rc = pthread_create(&t->thread, NULL, thread_main, t);
        if (rc != 0) { errno = rc; return -1; }
        t->started = 1;
    }
    return 0;
}

void albumfs_ring_stop(struct albumfs_ring *ring) {
    if (!ring) return;
    atomic_store(&ring->stopping, 1);
    for (unsigned i = 0; i < ring->n_threads; i++) {
        uint64_t one = 1;
        ssize_t w;
        do { w = write(ring->threads[i].event_fd, &one, sizeof one); } while (w < 0 && errno == EINTR);
    }
    for (unsigned i = 0; i < ring->n_threads; i++) {
        if (ring->threads[i].started) pthread_join(ring->threads[i].thread, NULL);
    }
    pthread_mutex_lock(&ring->slow_lock);
    pthread_cond_broadcast(&ring->slow_ready);
    pthread_mutex_unlock(&ring->slow_lock);
    for (int i = 0; i < ring->slow_started; i++) pthread_join(ring->slow[i], NULL);
    // Replies sent after this (none should be) go to /dev/fuse and are refused there.
    installed = NULL;
    albumfs_ring_discard(ring);
}
