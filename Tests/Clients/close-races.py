#!/usr/bin/env python3
"""A file's close racing with a rename, a link, a removal, a chmod or a touch of it by
another thread, as a photo tool and a file manager (or a sync client) may do: each
round writes a JPEG into a new file of an album (in half the rounds it then saves it
again: its next version) and closes it, the close making it a photo or a version, while
another thread, after a random pause, renames, links, removes, chmods or touches it.
Whichever goes first, the end must be as on a disk: every call succeeds, the names are
as the rename, link or removal left them, and the mode or mtime is the one set.

    close-races.py ALBUM JPEG ROUNDS [ALBUM_ELSEWHERE]

With ALBUM_ELSEWHERE (the same album through another host of the library), the other
thread works through it, and the names must end as expected through both hosts
(each is given 5 s to see the other's change).

Says each round that ended otherwise on stdout; exit 0 when none did.
"""
import os
import random
import sys
import threading
import time

album, jpeg, rounds = sys.argv[1], open(sys.argv[2], 'rb').read(), int(sys.argv[3])
elsewhere = sys.argv[4] if len(sys.argv) > 4 else album
rnd = random.Random(7)
said = []


def race(i, what, saved):
    name = os.path.join(album, 'r%d.jpg' % i)
    other = os.path.join(album, 'r%d-%s.jpg' % (i, what))
    # What the other thread names: the same files, through the other host when there is one.
    there = os.path.join(elsewhere, os.path.basename(name))
    there_other = os.path.join(elsewhere, os.path.basename(other))
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    # A distinct photo each round: a tail after the JPEG's end.
    os.write(fd, jpeg + b'%d' % i)
    if saved:
        # The close that races is a save of a photo: its next version.
        os.close(fd)
        fd = os.open(name, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, jpeg + b'%d saved' % i)
    errors = []
    pause = rnd.uniform(0, 0.004)

    def other_thread():
        time.sleep(pause)
        try:
            if what == 'mv':
                os.rename(there, there_other)
            elif what == 'ln':
                os.link(there, there_other)
            elif what == 'chmod':
                os.chmod(there, 0o600)
            elif what == 'touch':
                os.utime(there, (1000000000, 1000000000))
            else:
                os.unlink(there)
        except OSError as e:
            errors.append('%s: %s' % (what, os.strerror(e.errno)))

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        os.close(fd)
    except OSError as e:
        errors.append('close: %s' % os.strerror(e.errno))
    thread.join()
    expected = {'mv': {os.path.basename(other)}, 'ln': {os.path.basename(name), os.path.basename(other)},
                'rm': set()}.get(what, {os.path.basename(name)})

    def shown_in(folder):
        return {n for n in os.listdir(folder) if n.startswith('r%d.' % i) or n.startswith('r%d-' % i)}

    shown = shown_in(album)
    if elsewhere != album:
        # Each host sees the other's change a moment later.
        deadline = time.monotonic() + 5
        while (shown != expected or shown_in(elsewhere) != expected) and time.monotonic() < deadline:
            time.sleep(0.01)
            shown = shown_in(album)
        if shown == expected and shown_in(elsewhere) != expected:
            shown = shown_in(elsewhere)
    if errors or shown != expected:
        said.append('round %d (%s%s after %.1f ms): %s; names %s, expected %s'
                    % (i, what, ' of a save' if saved else '', pause * 1000, ', '.join(errors) or 'no error', sorted(shown), sorted(expected)))
    elif what in ('chmod', 'touch'):
        wanted = oct(0o600) if what == 'chmod' else 1000000000

        def got_through(path):
            st = os.stat(path)
            return oct(st.st_mode & 0o777) if what == 'chmod' else int(st.st_mtime)

        got = got_through(name)
        deadline = time.monotonic() + 5
        while elsewhere != album and time.monotonic() < deadline and (got != wanted or got_through(there) != wanted):
            time.sleep(0.01)
            got = got_through(name)
        if got == wanted and got_through(there) != wanted:
            got = got_through(there)
        if got != wanted:
            said.append('round %d (%s%s after %.1f ms): %s, expected %s'
                        % (i, what, ' of a save' if saved else '', pause * 1000, got, wanted))
    for n in shown:
        os.unlink(os.path.join(album, n))


for i in range(rounds):
    race(i, ('mv', 'ln', 'rm', 'chmod', 'touch')[i % 5], saved=i % 10 >= 5)
for line in said:
    print(line)
sys.exit(1 if said else 0)
