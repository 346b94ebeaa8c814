/*
 * nfs-hold: an NFS client that keeps its file handles across a server restart.
 *
 *   nfs-hold SERVER EXPORT PATH...
 *
 * Mounts EXPORT (NFSv3, libnfs), opens every PATH and prints "PATH INODE SIZE SUM" for
 * each; then waits for a line on stdin (the test restarts the servers meanwhile) and
 * reads every file again through the SAME open handles, printing the same line. Exits
 * 0 when every read succeeded, 1 otherwise. Built by the tests with gcc and libnfs.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <nfsc/libnfs.h>

static int report(struct nfs_context *nfs, struct nfsfh *fh, const char *path) {
    struct nfs_stat_64 st;
    if (nfs_fstat64(nfs, fh, &st) != 0) {
        printf("%s ERROR fstat: %s\n", path, nfs_get_error(nfs));
        return 1;
    }
    static char buf[1 << 20];
    uint64_t offset = 0, sum = 0;
    for (;;) {
        int n = nfs_pread(nfs, fh, offset, sizeof buf, buf);
        if (n < 0) {
            printf("%s ERROR read: %s\n", path, nfs_get_error(nfs));
            return 1;
        }
        if (n == 0) break;
        for (int i = 0; i < n; i++) sum = sum * 31 + (unsigned char)buf[i];
        offset += (uint64_t)n;
    }
    printf("%s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", path, (uint64_t)st.nfs_ino, offset, sum);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: nfs-hold SERVER EXPORT PATH...\n");
        return 64;
    }
    struct nfs_context *nfs = nfs_init_context();
    nfs_set_autoreconnect(nfs, -1);
    if (nfs_mount(nfs, argv[1], argv[2]) != 0) {
        fprintf(stderr, "mount failed: %s\n", nfs_get_error(nfs));
        return 1;
    }
    int count = argc - 3, failed = 0;
    struct nfsfh **fh = calloc((size_t)count, sizeof *fh);
    for (int i = 0; i < count; i++) {
        if (nfs_open(nfs, argv[3 + i], O_RDONLY, &fh[i]) != 0) {
            printf("%s ERROR open: %s\n", argv[3 + i], nfs_get_error(nfs));
            return 1;
        }
        failed |= report(nfs, fh[i], argv[3 + i]);
    }
    printf("HELD\n");
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) return 1;
    for (int i = 0; i < count; i++) failed |= report(nfs, fh[i], argv[3 + i]);
    fflush(stdout);
    return failed;
}
