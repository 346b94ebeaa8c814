#!/usr/bin/env python3
"""The plain-directory oracle: random sequences of file operations run on a plain
directory and on an album, each step compared (the call's result or errno, then every
name, type, size, mode and byte of both trees).

    plain-oracle.py PLAIN ALBUM PHOTOS SEED STEPS [modes] [links]

PLAIN and ALBUM are empty directories; PHOTOS is a folder of JPEGs. Exit 0 when both
trees agreed after every step; 1 with the first difference on stdout. With `modes`,
`chmod` by path and `fchmod` through handles are among the operations too (modes the
mount's umask leaves alone); with `links`, hard links (`ln`), and each file's count of
names is compared too (but a photo's: the album's counts its albums, which may be outside
the tree). Without them a seed plays the sequence it always played.

Three differences are the contract's, not defects, and are taken as they come: bytes that
are no photo written into a photo, or renamed over one, are refused with EINVAL (the
photo unchanged), where a plain directory takes them; then the plain tree is made the
album's again (open handles closed on both sides) and the run goes on. Each photo's
bytes are written once per run and copied only within a folder: a copy into another
folder is the same photo there (a membership), which a later save changes in both (so
photo bytes that a hidden file holds beside the photo are not renamed into another
folder either). A photo opened only to read keeps reading the version it opened while a
writer makes the next; reads through such a handle are not compared, nor is `fchmod`
through it played (after a save by rename its file is, on a disk, the version replaced).

A photo linked under a hidden name is a file of its own there, with the photo's bytes (a
photo shows under album names only): the plain tree copies it. A photo linked under
another name is not played: that is a membership, and a save over either name is the
photo's next version under both, where a disk replaces the one name. A file with several names
renamed over a photo is refused with EINVAL (it stays one file under all its names), as
above.

Bookkeeping that takes over 2 s (reading the album, closing the handles, copying the
album) is said on stderr: the mount stalled. (The album is copied here, not with rsync,
which now and then waited 60 s at its end, its own select timeout, with the daemon idle.)
"""
import errno
import hashlib
import os
import random
import shutil
import sys
import time

plain, album, photo_dir, seed, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
modes = 'modes' in sys.argv[6:]
links = 'links' in sys.argv[6:]
roots = (plain, album)
rnd = random.Random(seed)
photos = [open(os.path.join(photo_dir, n), 'rb').read() for n in sorted(os.listdir(photo_dir)) if n.lower().endswith('.jpg')]
rnd.shuffle(photos)
texts = [b'', b'hello\n', b'other text\n' * 50]
dirs = ['.', 'd1', 'd2', 'd1/e']
names = ['a.txt', 'b.jpg', 'c.jpg', 'D.JPG', '.h.tmp', 'x', 'd1', 'd2']
handles = {r: [] for r in roots}  # per root: [(fd, path it was opened as)]


def at(root, rel):
    return os.path.normpath(os.path.join(root, rel))


def is_photo(path):
    """Whether `path` (in the plain tree) holds a JPEG now."""
    try:
        with open(path, 'rb') as f:
            return f.read(2) == b'\xff\xd8'
    except OSError:
        return False


def album_photo(rel):
    """Whether the album shows a photo at `rel` (an emptied one included, which the plain
    tree cannot tell from an empty file)."""
    try:
        os.getxattr(at(album, rel), 'user.albumfs.sha256', follow_symlinks=False)
        return True
    except OSError:
        return False


def mode_a_save_keeps(root, source, rel):
    """In the plain tree, with `modes`: the mode photo `rel` keeps when photo bytes at
    `source` are renamed over it, where the album keeps the photo's own mode (the
    contract's save keeps the photo; a temporary file's mode that every new file has,
    or mkstemp's 0600, says nothing: docs/namespace.md, "Saving"). None otherwise."""
    target = at(plain, rel)
    if not modes or root != plain or os.path.basename(target).startswith('.') or os.path.islink(source):
        return None
    if not os.path.isfile(target) or os.path.islink(target) or not is_photo(source):
        return None
    # A photo emptied a moment ago (cut to nothing) is still that photo in the album.
    if not is_photo(target) and not album_photo(rel):
        return None
    if os.lstat(source).st_mode & 0o777 not in (0o644, 0o600):
        return None
    return os.lstat(target).st_mode & 0o777


def rename_keeping_mode(root, a, b):
    """`mv a b` in `root`; in the plain tree, with the mode the album keeps when photo
    bytes are renamed over a photo (`mode_a_save_keeps`)."""
    keep = mode_a_save_keeps(root, at(root, a), b)
    os.rename(at(root, a), at(root, b))
    if keep is not None:
        os.chmod(at(root, b), keep)


def copy_elsewhere(source, rel):
    """Whether renaming `source` to `rel` would bring photo bytes to a visible name in a
    folder while another file in another folder holds the same bytes (a copy that went
    there through a hidden name): the album then makes them that photo, as a copy into
    another folder does."""
    full = at(plain, source)
    if os.path.basename(at(plain, rel)).startswith('.') or os.path.islink(full) or not is_photo(full):
        return False
    data = open(full, 'rb').read()
    target = real_folder(rel)
    for folder, _, files in os.walk(plain):
        here = os.path.normpath(os.path.relpath(folder, plain)).lstrip('.')
        for name in files:
            other = os.path.join(folder, name)
            if here != target and other != full and not os.path.islink(other) and open(other, 'rb').read() == data:
                return True
    return False


def real_folder(rel):
    """The folder whose file `rel` reads or writes: a link's target's (cp follows links)."""
    return os.path.dirname(os.path.relpath(os.path.realpath(at(plain, rel)), plain))


def pick():
    return os.path.join(rnd.choice(dirs), rnd.choice(names))


def content():
    c = rnd.randrange(len(texts) + 2)
    if c < len(texts):
        return texts[c], 'text %d' % c
    return (photos.pop(), 'a photo') if photos else (b'no photo left', 'text')


def whole_write(rel, data, mode='wb'):
    def run(root):
        with open(at(root, rel), mode) as f:
            return f.write(data)
    return run


def step():
    """One random operation: (description, function of a root)."""
    k = rnd.choice(['write'] * 3 + ['append', 'rename', 'rename', 'unlink', 'mkdir', 'rmdir', 'truncate', 'symlink',
                                    'read', 'save', 'copy', 'open', 'open', 'pwrite', 'pwrite', 'pread', 'close',
                                    'ftruncate', 'mvdir'] + (['chmod', 'fchmod'] if modes else [])
                  + (['link', 'link'] if links else []))
    if k == 'link':
        a, b = pick(), pick()

        decided = []  # whether `a` is a photo, asked before either tree changes

        def link(root):
            if not decided:
                decided.append(album_photo(a))
            if decided[0] and not os.path.basename(b).startswith('.'):
                # A photo's second name is a membership: a save over either is the
                # photo's next version under both, where a disk replaces one name.
                return 'a photo: a membership, not played'
            if root == plain and decided[0] and not os.path.lexists(at(plain, b)):
                # A photo under a hidden name: a file of its own, with its bytes.
                return shutil.copy2(at(root, a), at(root, b)) and None
            return os.link(at(root, a), at(root, b), follow_symlinks=False)
        return 'ln %s %s' % (a, b), link
    if k == 'chmod':
        rel, mode = pick(), rnd.choice([0o600, 0o640, 0o644, 0o700, 0o755])
        return 'chmod %o %s' % (mode, rel), lambda root: os.chmod(at(root, rel), mode)
    if k in ('write', 'save'):
        rel = pick()
        data, what = content()
        if k == 'write':
            return '%s %s > %s' % (k, what, rel), whole_write(rel, data)

        def save(root):  # Python's atomic save: a temporary file replaces the name
            temp = os.path.join(os.path.dirname(at(root, rel)), '.save.tmp')
            with open(temp, 'wb') as f:
                f.write(data)
            keep = mode_a_save_keeps(root, temp, rel)
            os.replace(temp, at(root, rel))
            if keep is not None:
                os.chmod(at(root, rel), keep)
        return 'save %s as %s' % (what, rel), save
    if k == 'append':
        rel = pick()
        return 'append to ' + rel, whole_write(rel, b'tail', 'ab')
    if k in ('rename', 'copy'):
        a, b = pick(), pick()
        if k == 'rename':
            decided = []  # asked of the plain tree before it changes, for both roots

            def rename(root):
                if not decided:
                    decided.append(copy_elsewhere(a, b))
                if decided[0]:
                    return 'photo bytes another folder holds too: not moved'
                rename_keeping_mode(root, a, b)
            return 'mv %s %s' % (a, b), rename

        def copy(root):
            # Into a folder named as the target (`cp d1/b.jpg d2` puts d2/b.jpg).
            target = os.path.join(b, os.path.basename(a)) if os.path.isdir(at(plain, b)) else b
            if is_photo(at(plain, a)) and real_folder(a) != real_folder(target):
                return 'a photo into another folder: not copied'
            return shutil.copy2(at(root, a), at(root, b)) and None
        return 'cp -p %s %s' % (a, b), copy
    if k == 'unlink':
        rel = pick()
        return 'rm ' + rel, lambda root: os.unlink(at(root, rel))
    if k in ('mkdir', 'rmdir'):
        rel = rnd.choice(dirs[1:] + ['d2/f'])
        call = os.mkdir if k == 'mkdir' else os.rmdir
        return '%s %s' % (k, rel), lambda root: call(at(root, rel))
    if k == 'mvdir':
        a, b = rnd.choice(dirs[1:] + ['d2/f']), rnd.choice(dirs[1:] + ['d2/f', 'd3'])
        # A folder's name may hold a file by now: a photo's save keeps its mode there too.
        return 'mv %s/ %s' % (a, b), lambda root: rename_keeping_mode(root, a, b)
    if k == 'truncate':
        rel, n = pick(), rnd.choice([0, 3, 100000])
        return 'truncate -s %d %s' % (n, rel), lambda root: os.truncate(at(root, rel), n)
    if k == 'symlink':
        rel, target = pick(), rnd.choice(['a.txt', 'e/b.jpg', 'nowhere'])  # never out of the tree
        return 'ln -s %s %s' % (target, rel), lambda root: os.symlink(target, at(root, rel))
    if k == 'read':
        rel = pick()
        return 'cat ' + rel, lambda root: hashlib.md5(open(at(root, rel), 'rb').read()).hexdigest()
    if k == 'open':
        rel, flags = pick(), rnd.choice([os.O_RDWR, os.O_RDWR | os.O_CREAT, os.O_RDONLY])

        def open_(root):
            # A photo opened only to read keeps the version it opened while a writer
            # makes the next (docs/namespace.md, "Writing in place"): on a disk it
            # would see the writer's bytes. Such a handle's reads are not compared.
            keeps = flags == os.O_RDONLY and is_photo(at(plain, rel))
            handles[root].append((os.open(at(root, rel), flags, 0o644), rel, keeps))
            return len(handles[root])
        return 'open %s flags %o' % (rel, flags), open_
    n, offset, data = rnd.randrange(4), rnd.choice([0, 5, 200000]), rnd.choice([b'xyz', b'more bytes here'])

    def on_handle(root):
        if n >= len(handles[root]):
            return 'no such handle'
        fd, rel, keeps = handles[root][n]
        if k == 'pwrite':
            return rel, os.pwrite(fd, data, offset)
        if k == 'pread':
            content = os.pread(fd, 300000, 0)
            return rel, 'the version it opened' if keeps else hashlib.md5(content).hexdigest()
        if k == 'ftruncate':
            return rel, os.ftruncate(fd, offset)
        if k == 'fchmod':
            if keeps:  # its file may be a version a save replaced: here, the photo
                return rel, 'not played on a photo opened to read'
            return rel, os.fchmod(fd, 0o600 if offset == 0 else 0o640 if offset == 5 else 0o755)
        del handles[root][n]
        return rel, os.close(fd)
    return '%s handle %d at %d' % (k, n, offset), on_handle


def tree(root):
    out = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [s for s in subfolders if s != '.thumbnails']
        for name in subfolders + files:
            full = os.path.join(folder, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                out[rel] = '-> ' + os.readlink(full)
            elif os.path.isdir(full):
                out[rel] = 'folder %o' % (st.st_mode & 0o777)
            else:
                out[rel] = '%d bytes, mode %o, md5 %s' % (st.st_size, st.st_mode & 0o777,
                                                          hashlib.md5(open(full, 'rb').read()).hexdigest())
                if links and not album_photo(os.path.relpath(full, root)):
                    out[rel] += ', %d names' % st.st_nlink
    return out


def result(function, root):
    try:
        return 'ok', function(root)
    except OSError as e:
        return 'error', errno.errorcode.get(e.errno, e.errno)


def close_all():
    """Closes every handle; returns the errnos of failed closes, by root."""
    failed = {}
    for root in roots:
        for fd, _, _ in handles[root]:
            try:
                os.close(fd)
            except OSError as e:
                failed[root] = errno.errorcode.get(e.errno, e.errno)
        handles[root] = []
    return failed


def timed(what, function, *arguments):
    """Runs a step's bookkeeping; one that takes long is said (the mount stalled)."""
    began = time.monotonic()
    value = function(*arguments)
    if time.monotonic() - began > 2:
        print('  slow: %s took %.1f s' % (what, time.monotonic() - began), file=sys.stderr, flush=True)
    return value


def copy_the_album():
    """The plain tree made the album's: emptied, then every folder, link and file copied
    (bytes and mode), names of one file linked."""
    copied = {}  # the album's inode number: the plain tree's copy
    for name in os.listdir(plain):
        full = os.path.join(plain, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)
    for folder, subfolders, files in os.walk(album):
        subfolders[:] = [s for s in subfolders if s != '.thumbnails']
        there = os.path.join(plain, os.path.relpath(folder, album))
        for name in subfolders:
            source = os.path.join(folder, name)
            if os.path.islink(source):
                os.symlink(os.readlink(source), os.path.join(there, name))
            else:
                os.mkdir(os.path.join(there, name))
                os.chmod(os.path.join(there, name), os.stat(source).st_mode & 0o777)
        for name in files:
            source = os.path.join(folder, name)
            number = os.lstat(source).st_ino
            if links and number in copied:
                os.link(copied[number], os.path.join(there, name), follow_symlinks=False)
            elif os.path.islink(source):
                os.symlink(os.readlink(source), os.path.join(there, name))
            else:
                shutil.copy2(source, os.path.join(there, name))
            copied[number] = os.path.join(there, name)


def take_the_albums():
    timed('closing every handle', close_all)
    timed('copying the album', copy_the_album)


history = []
started = time.monotonic()
slowest = (0.0, '')
for i in range(steps + 1):
    began = time.monotonic()
    if i == steps:
        what, outcome = 'close every handle', timed('closing every handle', close_all)
        there, here = outcome.get(plain), outcome.get(album)
    else:
        what, function = step()
        there, here = result(function, plain), result(function, album)
    took = time.monotonic() - began
    slowest = max(slowest, (took, what))
    if took > 2:
        print('  slow: step %d, %s, took %.1f s' % (i, what, took), file=sys.stderr, flush=True)
    history.append('%d %s: %s (%.3f s)' % (i, what, here, took))
    if i == steps:
        refused = here == 'EINVAL' and there is None
    else:
        refused = there[0] == 'ok' and here == ('error', 'EINVAL')
    if refused:
        take_the_albums()
        continue
    a, b = tree(plain), timed('reading the album after step %d' % i, tree, album)
    if there != here or a != b:
        print('seed %d, step %d, %s: plain directory %s, album %s (%.1f s into the run)' % (seed, i, what, there, here, time.monotonic() - started))
        for name in sorted(set(a) | set(b)):
            if a.get(name) != b.get(name):
                print('  %s: plain directory %s, album %s' % (name, a.get(name), b.get(name)))
        print('the steps before:')
        print('\n'.join('  ' + h for h in history[-25:-1] if 'ENOENT' not in h and 'no such handle' not in h))
        sys.exit(1)
print('seed %d: %d steps, both trees alike after each (%.1f s; the slowest step %.3f s: %s)' % (seed, steps, time.monotonic() - started, slowest[0], slowest[1]))
