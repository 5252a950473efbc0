"""A stand-in MCP server that does not exit when its stdin ends: it writes its pid to the file
named by its argument, echoes every line it reads, and runs on past its stdin's end (and a
broken stdout) until it exits by itself after 60 s, so that none outlives a failed test long.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time

LIFETIME = 60.0


def main(pid_path: str) -> None:
    with open(pid_path + ".tmp", "w") as out:
        out.write(str(os.getpid()))
    os.replace(pid_path + ".tmp", pid_path)  # whole once it is there
    deadline = time.monotonic() + LIFETIME
    ended = False
    while (left := deadline - time.monotonic()) > 0:
        if ended:
            time.sleep(min(left, 0.05))
            continue
        readable, _, _ = select.select([0], [], [], left)
        if not readable:
            continue
        line = os.read(0, 65536)
        if not line:
            ended = True  # ignored, as the servers that outlive their client do
            continue
        with contextlib.suppress(OSError):  # its client is gone: it runs on all the same
            os.write(1, line)


if __name__ == "__main__":
    main(sys.argv[1])
