#ifndef ALBUMFS_FUSE_RING_H
#define ALBUMFS_FUSE_RING_H
// FUSE over io_uring (kernel 6.14 and later, when the fuse module's `enable_uring` is
// set): requests reach the daemon through io_uring queues, one per CPU, served by
// threads bound to that CPU, instead of through read(2) and write(2) on /dev/fuse.
// libfuse 3.14 knows nothing of it; see ring.c for how it is put under libfuse.

#include <stddef.h>

struct fuse_session;
struct albumfs_ring;

// Whether this kernel offers FUSE over io_uring now (the fuse module's `enable_uring`).
int albumfs_ring_offered(void);

// Makes one io_uring per serving thread, before INIT is answered: the INIT reply may
// ask for io_uring only when the rings exist, since once it has asked, the kernel holds
// every request until the queues are registered or a registration fails. NULL (errno
// set) when io_uring cannot be used here.
struct albumfs_ring *albumfs_ring_prepare(struct fuse_session *se);

// After INIT was answered with FUSE_OVER_IO_URING: puts the ring under libfuse (its
// replies to ring requests go back through the ring) and starts the serving threads,
// which register their entries; `max_payload` is the largest request or reply body
// the kernel will send (from INIT's max_write and max_pages). 0 on success.
int albumfs_ring_start(struct albumfs_ring *ring, size_t max_payload);

// Stops the serving threads (each finishes the request it is in) and frees the ring.
void albumfs_ring_stop(struct albumfs_ring *ring);

// Frees a ring that was prepared but not started (INIT did not grant io_uring).
void albumfs_ring_discard(struct albumfs_ring *ring);

// Whether the request the calling thread is handling came through the ring. Its reply
// is copied into the buffer its arguments arrived in (a WRITE's bytes among them): what
// reads them must do so before replying.
int albumfs_ring_in_request(void);

// Requests served through the ring so far, and whether the kernel refused the
// registration (then every request goes through /dev/fuse, as without the ring).
unsigned long albumfs_ring_served(const struct albumfs_ring *ring);
int albumfs_ring_refused(const struct albumfs_ring *ring);

#endif
