// File handles as an NFS server keeps them (name_to_handle_at) and opens them again
// after the kernel forgot the inode (open_by_handle_at: the kernel asks the FUSE daemon
// to look up "." in the handle's node), for ReliabilityTests.
//
//   handles save OUT PATH...    writes one handle a line (type, then bytes in hex)
//   handles open MOUNT IN N     opens the Nth handle of IN, prints "ok" or the errno
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "save") == 0) {
        FILE *out = fopen(argv[2], "w");
        if (!out) { perror(argv[2]); return 2; }
        for (int i = 3; i < argc; i++) {
            struct file_handle *h = malloc(sizeof *h + MAX_HANDLE_SZ);
            h->handle_bytes = MAX_HANDLE_SZ;
            int mount_id;
            if (name_to_handle_at(AT_FDCWD, argv[i], h, &mount_id, 0) != 0) { perror(argv[i]); return 2; }
            fprintf(out, "%d ", h->handle_type);
            for (unsigned j = 0; j < h->handle_bytes; j++) fprintf(out, "%02x", h->f_handle[j]);
            fprintf(out, "\n");
            free(h);
        }
        fclose(out);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "open") == 0) {
        int mount_fd = open(argv[2], O_RDONLY | O_DIRECTORY);
        FILE *in = fopen(argv[3], "r");
        if (mount_fd < 0 || !in) { perror("open"); return 2; }
        int wanted = atoi(argv[4]), type;
        char hex[2 * MAX_HANDLE_SZ + 1];
        for (int line = 0; fscanf(in, "%d %256s", &type, hex) == 2; line++) {
            if (line != wanted) continue;
            struct file_handle *h = malloc(sizeof *h + MAX_HANDLE_SZ);
            h->handle_type = type;
            h->handle_bytes = strlen(hex) / 2;
            for (unsigned j = 0; j < h->handle_bytes; j++) sscanf(hex + 2 * j, "%2hhx", &h->f_handle[j]);
            int fd = open_by_handle_at(mount_fd, h, O_RDONLY);
            if (fd < 0) { printf("%s\n", strerrorname_np(errno)); return 1; }
            printf("ok\n");
            return 0;
        }
        fprintf(stderr, "no handle %d\n", wanted);
        return 2;
    }
    fprintf(stderr, "usage: handles save OUT PATH... | handles open MOUNT IN N\n");
    return 2;
}
