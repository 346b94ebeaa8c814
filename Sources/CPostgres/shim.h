#ifndef ALBUMFS_CPOSTGRES_SHIM_H
#define ALBUMFS_CPOSTGRES_SHIM_H
// libpq, PostgreSQL's C client (Debian's libpq-dev): the metadata backend that several
// hosts share (PRODUCT.md section 8).
#include <libpq-fe.h>
#include <errno.h>
#include <poll.h>

// Waits until the connection's socket has something to read, or `timeout_ms` passes
// (poll's variadic-free form, kept here so that the Swift side needs no Glibc pollfd
// juggling). 1: readable, 0: timed out, -1: error (errno set).
static inline int shim_pq_wait_readable(PGconn *conn, int timeout_ms) {
    struct pollfd pfd = { .fd = PQsocket(conn), .events = POLLIN, .revents = 0 };
    if (pfd.fd < 0) { errno = EBADF; return -1; }
    int rc = poll(&pfd, 1, timeout_ms);
    return rc > 0 ? 1 : rc;
}
#endif
