#ifndef ALBUMFS_CSYSTEM_SHIM_H
#define ALBUMFS_CSYSTEM_SHIM_H
// Linux calls and constants Swift's Glibc module does not give: copy_file_range is
// declared by glibc only under _GNU_SOURCE (which cannot be set here without clashing
// with the Glibc module), and UTIME_OMIT is a macro Swift does not import. Used
// through AlbumCore's `SystemCalls` and nowhere else.
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <sys/xattr.h>

extern long syscall(long number, ...);

// Opens `path` below the folder `dirfd` and never outside it: no "..", no absolute
// path, no symbolic link anywhere on the way (openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS). A library file replaced by a link fails with ELOOP or EXDEV.
static inline int shim_open_beneath(int dirfd, const char *path, int flags, unsigned mode) {
    struct open_how how = {0};
    how.flags = (unsigned long long)flags;
    how.mode = (flags & 0100 /* O_CREAT */) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

extern ssize_t copy_file_range(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len, unsigned int flags);

static inline ssize_t shim_copy_file_range(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len) {
    return copy_file_range(fd_in, off_in, fd_out, off_out, len, 0);
}

extern int pipe2(int pipefd[2], int flags);
extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);

// rename that fails with EEXIST instead of replacing (RENAME_NOREPLACE).
static inline int shim_renameat_noreplace(int olddir, const char *oldname, int newdir, const char *newname) {
    return renameat2(olddir, oldname, newdir, newname, 1);
}

// Opens a folder below `dirfd` as a handle for the *at calls (O_PATH): never through
// a link, never outside.
static inline int shim_open_folder_beneath(int dirfd, const char *path) {
    struct open_how how = {0};
    how.flags = 010000000 /* O_PATH */ | 0200000 /* O_DIRECTORY */ | 02000000 /* O_CLOEXEC */;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}
extern int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);

// Starts writeback of a range without waiting for it (SYNC_FILE_RANGE_WRITE).
static inline int shim_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, 2);
}

extern int fallocate64(int fd, int mode, off_t offset, off_t len);

// fallocate(2): declared by glibc only under _GNU_SOURCE.
static inline int shim_fallocate(int fd, int mode, off_t offset, off_t length) {
    return fallocate64(fd, mode, offset, length);
}

static inline int shim_pipe_cloexec(int fds[2]) { return pipe2(fds, 02000000 /* O_CLOEXEC */); }

static inline long shim_utime_omit(void) { return UTIME_OMIT; }

// A spawned child inherits only fds 0, 1 and 2 (posix_spawn_file_actions_addclosefrom_np
// needs _GNU_SOURCE).
#include <spawn.h>
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *, int);
static inline int shim_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
#endif
