#!/usr/bin/env python3
"""A file's close racing with a rename, a link or a removal of its name by another
thread, as a photo tool and a file manager (or a sync client) may do: each round writes
a JPEG into a new file of an album and closes it (the close makes it a photo) while
another thread, after a random pause, renames, links or removes it. Whichever goes first,
the end must be as on a disk: every call succeeds, and the names are as the rename, link
or removal left them.

    close-races.py ALBUM JPEG ROUNDS

Says each round that ended otherwise on stdout; exit 0 when none did.
"""
import os
import random
import sys
import threading
import time

album, jpeg, rounds = sys.argv[1], open(sys.argv[2], 'rb').read(), int(sys.argv[3])
rnd = random.Random(7)
said = []


def race(i, what):
    name = os.path.join(album, 'r%d.jpg' % i)
    other = os.path.join(album, 'r%d-%s.jpg' % (i, what))
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    # A distinct photo each round: a tail after the JPEG's end.
    os.write(fd, jpeg + b'%d' % i)
    errors = []
    pause = rnd.uniform(0, 0.004)

    def other_thread():
        time.sleep(pause)
        try:
            if what == 'mv':
                os.rename(name, other)
            elif what == 'ln':
                os.link(name, other)
            else:
                os.unlink(name)
        except OSError as e:
            errors.append('%s: %s' % (what, os.strerror(e.errno)))

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        os.close(fd)
    except OSError as e:
        errors.append('close: %s' % os.strerror(e.errno))
    thread.join()
    shown = {n for n in os.listdir(album) if n.startswith('r%d.' % i) or n.startswith('r%d-' % i)}
    expected = {'mv': {os.path.basename(other)}, 'ln': {os.path.basename(name), os.path.basename(other)},
                'rm': set()}[what]
    if errors or shown != expected:
        said.append('round %d (%s after %.1f ms): %s; names %s, expected %s'
                    % (i, what, pause * 1000, ', '.join(errors) or 'no error', sorted(shown), sorted(expected)))
    for n in shown:
        os.unlink(os.path.join(album, n))


for i in range(rounds):
    race(i, ('mv', 'ln', 'rm')[i % 3])
for line in said:
    print(line)
sys.exit(1 if said else 0)
