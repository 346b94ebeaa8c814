/*
 * nfs-write: an NFS client that writes a file slowly and keeps its handle.
 *
 *   nfs-write SERVER EXPORT PATH SOURCE PARTS PAUSE_MS
 *
 * Mounts EXPORT (NFSv3, libnfs), creates PATH and writes SOURCE into it in PARTS equal
 * parts, each followed by an fsync (a COMMIT) and a pause of PAUSE_MS, as a slow client
 * on a slow link does. Then prints "WRITTEN INODE" (st_ino through its handle), waits for
 * a line on stdin, prints "AFTER INODE SIZE" through the same handle, closes, and exits
 * 0, or 1 at the first error. Built by the tests with gcc and libnfs.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <nfsc/libnfs.h>

static void pause_ms(long ms) {
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: nfs-write SERVER EXPORT PATH SOURCE PARTS PAUSE_MS\n");
        return 64;
    }
    FILE *source = fopen(argv[4], "rb");
    if (!source) { perror(argv[4]); return 1; }
    fseek(source, 0, SEEK_END);
    long size = ftell(source);
    fseek(source, 0, SEEK_SET);
    char *bytes = malloc((size_t)size);
    if (!bytes || fread(bytes, 1, (size_t)size, source) != (size_t)size) { perror("read"); return 1; }
    fclose(source);
    int parts = atoi(argv[5]);
    long pause = atol(argv[6]);

    struct nfs_context *nfs = nfs_init_context();
    if (nfs_mount(nfs, argv[1], argv[2]) != 0) {
        fprintf(stderr, "mount failed: %s\n", nfs_get_error(nfs));
        return 1;
    }
    struct nfsfh *fh;
    if (nfs_creat(nfs, argv[3], 0644, &fh) != 0) {
        printf("ERROR create: %s\n", nfs_get_error(nfs));
        return 1;
    }
    long offset = 0;
    for (int i = 0; i < parts; i++) {
        long end = (i == parts - 1) ? size : size / parts * (i + 1);
        while (offset < end) {
            int n = nfs_pwrite(nfs, fh, (uint64_t)offset, (uint64_t)(end - offset), bytes + offset);
            if (n <= 0) { printf("ERROR write: %s\n", nfs_get_error(nfs)); return 1; }
            offset += n;
        }
        if (nfs_fsync(nfs, fh) != 0) { printf("ERROR fsync: %s\n", nfs_get_error(nfs)); return 1; }
        if (i < parts - 1) pause_ms(pause);
    }
    struct nfs_stat_64 st;
    if (nfs_fstat64(nfs, fh, &st) != 0) { printf("ERROR fstat: %s\n", nfs_get_error(nfs)); return 1; }
    printf("WRITTEN %" PRIu64 "\n", (uint64_t)st.nfs_ino);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) return 1;
    if (nfs_fstat64(nfs, fh, &st) != 0) { printf("ERROR fstat: %s\n", nfs_get_error(nfs)); return 1; }
    printf("AFTER %" PRIu64 " %" PRIu64 "\n", (uint64_t)st.nfs_ino, (uint64_t)st.nfs_size);
    fflush(stdout);
    if (nfs_close(nfs, fh) != 0) { printf("ERROR close: %s\n", nfs_get_error(nfs)); return 1; }
    return 0;
}
