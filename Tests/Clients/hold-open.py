#!/usr/bin/env python3
"""Holds many files of a folder open at once, as a program that opens a whole library
(an indexer, a file server with many clients) does, then reads each through its
descriptor.

    hold-open.py FOLDER COUNT [--create NAME] [--write NAME SOURCE]...

First, for each `--write`, opens NAME write-only (`O_CREAT|O_TRUNC`: a new file, or a
save into one that is there). Then opens COUNT descriptors to read, going round the
folder's regular files in name order (the ones to be written left out), and keeps every
one open. Then, with `--create`, tries to create NAME (`O_CREAT|O_EXCL`) while they are
held, and writes each `--write` file with the bytes of SOURCE and closes it. Then reads
each held descriptor to its end and closes it. Prints one JSON object: how many opened,
each errno name that refused an open (and how often), the create's result ("created" or
an errno name), each write's ("closed" or the errno name of its write or close), each
file's SHA-256 as read through every one of its descriptors (a list of distinct
digests: one entry when every descriptor read the same bytes), and the read errors. Run
on a plain directory and on an album holding the same files, the outputs must agree.
"""
import argparse
import errno
import hashlib
import json
import os
import resource
import sys

arguments = argparse.ArgumentParser()
arguments.add_argument("folder")
arguments.add_argument("count", type=int)
arguments.add_argument("--create")
arguments.add_argument("--write", nargs=2, action="append", default=[], metavar=("NAME", "SOURCE"))
options = arguments.parse_args()
folder, count, new_name = options.folder, options.count, options.create
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < count + 64:
    print(json.dumps({"error": f"this process may hold only {hard} files open"}))
    sys.exit(2)
resource.setrlimit(resource.RLIMIT_NOFILE, (count + 64, hard))

writers = []
for name, source in options.write:
    writers.append((name, source, os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)))
written = {name for name, _, _ in writers}
names = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n)) and n not in written)
held, refused = [], {}
for i in range(count):
    name = names[i % len(names)]
    try:
        held.append((name, os.open(os.path.join(folder, name), os.O_RDONLY)))
    except OSError as e:
        refused[errno.errorcode[e.errno]] = refused.get(errno.errorcode[e.errno], 0) + 1

created = None
if new_name is not None:
    try:
        fd = os.open(os.path.join(folder, new_name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"made while many files were held open\n")
        os.close(fd)
        created = "created"
    except OSError as e:
        created = errno.errorcode[e.errno]

writes = {}
for name, source, fd in writers:
    with open(source, "rb") as f:
        data = f.read()
    try:
        os.write(fd, data)
    except OSError as e:
        writes[name] = errno.errorcode[e.errno]
    try:
        os.close(fd)
        writes.setdefault(name, "closed")
    except OSError as e:
        writes.setdefault(name, errno.errorcode[e.errno])

digests, read_errors = {}, {}
for name, fd in held:
    try:
        data = b""
        while True:
            piece = os.read(fd, 1 << 20)
            if not piece:
                break
            data += piece
        digests.setdefault(name, set()).add(hashlib.sha256(data).hexdigest())
    except OSError as e:
        read_errors[errno.errorcode[e.errno]] = read_errors.get(errno.errorcode[e.errno], 0) + 1
    os.close(fd)

print(json.dumps({
    "opened": len(held),
    "refused": refused,
    "created": created,
    "digests": {name: sorted(d) for name, d in sorted(digests.items())},
    "read_errors": read_errors,
    "writes": writes,
}, sort_keys=True))
