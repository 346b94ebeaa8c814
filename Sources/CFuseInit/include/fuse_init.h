#ifndef ALBUMFS_FUSE_INIT_H
#define ALBUMFS_FUSE_INIT_H
// The kernel's INIT, answered by AlbumFS rather than by libfuse's loop (see init.c for
// why and how).

#include <stddef.h>

struct fuse_session;

// What came of INIT: -1, or 0 and what was granted, as bits.
enum albumfs_init_result {
    ALBUMFS_INIT_FAILED = -1,       // errno set; the session cannot serve
    ALBUMFS_INIT_DONE = 0,          // answered, without passthrough nor io_uring
    ALBUMFS_INIT_PASSTHROUGH = 1,   // passthrough granted
    ALBUMFS_INIT_URING = 2,         // FUSE over io_uring asked for (the kernel offered it)
};

enum albumfs_init_fault { ALBUMFS_INIT_NO_FAULT = 0, ALBUMFS_INIT_FAULT_RESTORE = 1, ALBUMFS_INIT_FAULT_REPLY = 2 };

// Reads the kernel's INIT, lets libfuse handle it into a pipe, amends the reply and
// sends it. `want_passthrough`: ask for FUSE passthrough when the kernel offers it;
// `want_uring`: ask for FUSE over io_uring when it offers that. `max_payload` gets
// the largest request or reply body the kernel will send (for the ring's entries).
// A libfuse error reply (for instance a protocol it does not speak) is sent on as it
// is and reported as a failure with errno EPROTO.
//
// `test_fault` lets the mount tests walk the two failure paths for real: 1 makes the
// restore of the device fail (as a dup3 failure would), 2 turns the reply into an
// error reply. 0 in every other use.
int albumfs_answer_init(struct fuse_session *se, int want_passthrough, int want_uring, int test_fault,
                        size_t *max_payload);

#endif
