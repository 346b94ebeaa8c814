/*
 * nfs-hold: an NFS client that keeps its file handles across a server restart.
 *
 *   nfs-hold [-4] [-n] SERVER EXPORT PATH...
 *
 * Mounts EXPORT (NFSv3, libnfs; NFSv4 with -4, EXPORT then the pseudo path, and each
 * open a state the server keeps with a descriptor of its own), opens every PATH and
 * prints "PATH INODE SIZE SUM" for each (with -n, reading nothing yet: "PATH INODE SIZE
 * -"); then, at each line on stdin (the test restarts the servers, or writes the file,
 * meanwhile), reads every file again through the SAME open handles, printing the whole
 * line, then "ROUND". SIZE is what was read, which must be what fstat says. Exits at the
 * end of its input: 0 when every read succeeded, 1 otherwise. Built by the tests with
 * gcc and libnfs.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <nfsc/libnfs.h>

static int report(struct nfs_context *nfs, struct nfsfh *fh, const char *path, int read) {
    struct nfs_stat_64 st;
    if (nfs_fstat64(nfs, fh, &st) != 0) {
        printf("%s ERROR fstat: %s\n", path, nfs_get_error(nfs));
        return 1;
    }
    if (!read) {
        printf("%s %" PRIu64 " %" PRIu64 " -\n", path, (uint64_t)st.nfs_ino, (uint64_t)st.nfs_size);
        return 0;
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
    if (offset != (uint64_t)st.nfs_size) {
        printf("%s ERROR size: %" PRIu64 " bytes read, fstat says %" PRIu64 "\n", path, offset, (uint64_t)st.nfs_size);
        return 1;
    }
    printf("%s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", path, (uint64_t)st.nfs_ino, offset, sum);
    return 0;
}

int main(int argc, char **argv) {
    int version = 3, readFirst = 1, first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "-4") == 0) version = 4;
        else if (strcmp(argv[first], "-n") == 0) readFirst = 0;
        else break;
    }
    if (argc - first < 3) {
        fprintf(stderr, "usage: nfs-hold [-4] [-n] SERVER EXPORT PATH...\n");
        return 64;
    }
    struct nfs_context *nfs = nfs_init_context();
    nfs_set_autoreconnect(nfs, -1);
    if (nfs_set_version(nfs, version) != 0 || nfs_mount(nfs, argv[first], argv[first + 1]) != 0) {
        fprintf(stderr, "mount failed: %s\n", nfs_get_error(nfs));
        return 1;
    }
    char **paths = argv + first + 2;
    int count = argc - first - 2, failed = 0;
    struct nfsfh **fh = calloc((size_t)count, sizeof *fh);
    for (int i = 0; i < count; i++) {
        if (nfs_open(nfs, paths[i], O_RDONLY, &fh[i]) != 0) {
            printf("%s ERROR open: %s\n", paths[i], nfs_get_error(nfs));
            return 1;
        }
        failed |= report(nfs, fh[i], paths[i], readFirst);
    }
    printf("HELD\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        for (int i = 0; i < count; i++) failed |= report(nfs, fh[i], paths[i], 1);
        printf("ROUND\n");
        fflush(stdout);
    }
    return failed;
}
