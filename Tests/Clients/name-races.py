#!/usr/bin/env python3
"""A new file's name taken at once through two hosts of one library: each round, one
thread creates a file (O_CREAT | O_EXCL) and writes a line of text into it through one
host, while another thread, after a random pause, renames a photo of the album to that
same name through the other host. On a disk one of the two comes first: either the
create finds the name taken (EEXIST) and the rename made it the photo, or the create
made it and the rename replaced it. Either way the album ends with that name once,
holding the photo's bytes, through both hosts, and no call but the create's fails.

    name-races.py ALBUM ALBUM_ELSEWHERE JPEG ROUNDS

Says each round that ended otherwise on stdout; exit 0 when none did.
"""
import errno
import os
import random
import sys
import threading
import time

album, elsewhere, jpeg, rounds = sys.argv[1], sys.argv[2], open(sys.argv[3], 'rb').read(), int(sys.argv[4])
rnd = random.Random(11)
said = []


def race(i):
    photo_bytes = jpeg + b'%d' % i  # a distinct photo each round: a tail after the JPEG's end
    photo, name = 'q%d.jpg' % i, 'n%d.jpg' % i
    with open(os.path.join(album, photo), 'wb') as f:
        f.write(photo_bytes)
    # The other host shows the photo before its thread renames it.
    deadline = time.monotonic() + 5
    while not os.path.exists(os.path.join(elsewhere, photo)) and time.monotonic() < deadline:
        time.sleep(0.01)
    errors, pause = [], rnd.uniform(0, 0.004)

    def other_thread():
        time.sleep(pause)
        try:
            os.rename(os.path.join(elsewhere, photo), os.path.join(elsewhere, name))
        except OSError as e:
            errors.append('mv: %s' % os.strerror(e.errno))

    thread = threading.Thread(target=other_thread)
    thread.start()
    step = 'create'
    try:
        fd = os.open(os.path.join(album, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            step = 'write'
            os.write(fd, b'a line of text\n')
        finally:
            step = 'close'
            os.close(fd)
    except OSError as e:
        if e.errno != errno.EEXIST or step != 'create':
            errors.append('%s: %s' % (step, os.strerror(e.errno)))
    thread.join()

    def shown(folder):
        return sorted(n for n in os.listdir(folder) if n in (photo, name))

    deadline = time.monotonic() + 5
    while (shown(album) != [name] or shown(elsewhere) != [name]) and time.monotonic() < deadline:
        time.sleep(0.01)
    ends = {'here': shown(album), 'elsewhere': shown(elsewhere)}
    if errors or ends['here'] != [name] or ends['elsewhere'] != [name]:
        said.append('round %d (mv after %.1f ms): %s; names %s, expected [%r] through both'
                    % (i, pause * 1000, ', '.join(errors) or 'no error', ends, name))
    else:
        with open(os.path.join(album, name), 'rb') as f:
            if f.read() != photo_bytes:
                said.append('round %d (mv after %.1f ms): %s does not hold the photo' % (i, pause * 1000, name))
    for n in set(ends['here']):
        try:
            os.unlink(os.path.join(album, n))
        except OSError as e:
            said.append('round %d: rm %s: %s' % (i, n, os.strerror(e.errno)))


for i in range(rounds):
    race(i)
for line in said:
    print(line)
sys.exit(1 if said else 0)
