/*
 * nfs-edit: an NFS client that saves a file in place while it holds it open to read.
 *
 *   nfs-edit READ_VERSION SERVER READ_EXPORT WRITE_EXPORT PATH SOURCE
 *
 * Opens PATH to read through an NFS READ_VERSION (3 or 4) mount of READ_EXPORT (under 4
 * the pseudo path: the open is a state the server keeps, with its own descriptor) and
 * reads it whole; then, the reader still open, writes SOURCE over PATH through an NFSv3
 * mount of WRITE_EXPORT (libnfs 5's NFSv4 writes fail to encode) from offset 0, cuts it
 * to SOURCE's size, commits (fsync) and closes both. Prints "READ SIZE" and
 * "SAVED SIZE", or "ERROR STEP: REASON" and exits 1 at the first error. Built by the
 * tests with gcc and libnfs.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <nfsc/libnfs.h>

static struct nfs_context *mounted(int version, const char *server, const char *export) {
    struct nfs_context *nfs = nfs_init_context();
    if (nfs_set_version(nfs, version) != 0 || nfs_mount(nfs, server, export) != 0) {
        printf("ERROR mount of %s (NFSv%d): %s\n", export, version, nfs_get_error(nfs));
        exit(1);
    }
    return nfs;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: nfs-edit READ_VERSION SERVER READ_EXPORT WRITE_EXPORT PATH SOURCE\n");
        return 64;
    }
    const char *path = argv[5];
    FILE *source = fopen(argv[6], "rb");
    if (!source) { perror(argv[6]); return 1; }
    fseek(source, 0, SEEK_END);
    long size = ftell(source);
    fseek(source, 0, SEEK_SET);
    char *bytes = malloc((size_t)size);
    if (!bytes || fread(bytes, 1, (size_t)size, source) != (size_t)size) { perror("read"); return 1; }
    fclose(source);

    struct nfs_context *readers = mounted(atoi(argv[1]) == 4 ? 4 : 3, argv[2], argv[3]);
    struct nfsfh *reader;
    if (nfs_open(readers, path, O_RDONLY, &reader) != 0) { printf("ERROR open to read: %s\n", nfs_get_error(readers)); return 1; }
    char buffer[32768];
    uint64_t total = 0;
    for (;;) {
        int n = nfs_pread(readers, reader, total, sizeof buffer, buffer);
        if (n < 0) { printf("ERROR read: %s\n", nfs_get_error(readers)); return 1; }
        if (n == 0) break;
        total += (uint64_t)n;
    }
    printf("READ %" PRIu64 "\n", total);

    struct nfs_context *writers = mounted(3, argv[2], argv[4]);
    struct nfsfh *fh;
    if (nfs_open(writers, path, O_RDWR, &fh) != 0) { printf("ERROR open to write: %s\n", nfs_get_error(writers)); return 1; }
    long offset = 0;
    while (offset < size) {
        int n = nfs_pwrite(writers, fh, (uint64_t)offset, (uint64_t)(size - offset), bytes + offset);
        if (n <= 0) { printf("ERROR write: %s\n", nfs_get_error(writers)); return 1; }
        offset += n;
    }
    if (nfs_ftruncate(writers, fh, (uint64_t)size) != 0) { printf("ERROR truncate: %s\n", nfs_get_error(writers)); return 1; }
    if (nfs_fsync(writers, fh) != 0) { printf("ERROR fsync: %s\n", nfs_get_error(writers)); return 1; }
    if (nfs_close(writers, fh) != 0) { printf("ERROR close: %s\n", nfs_get_error(writers)); return 1; }
    if (nfs_close(readers, reader) != 0) { printf("ERROR close of the reader: %s\n", nfs_get_error(readers)); return 1; }
    printf("SAVED %ld\n", size);
    return 0;
}
