#ifndef ALBUMFS_CFUSE_SHIM_H
#define ALBUMFS_CFUSE_SHIM_H
// Debian ships libfuse 3.14; with this version fuse_session_loop_mt and
// fuse_loop_cfg_create are real (versioned) symbols.
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <sys/file.h>
#include <fcntl.h>
#include <errno.h>
#endif
