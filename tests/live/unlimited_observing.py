"""The real observing process, with the file size limit it inherited lifted: started in place
of ``python -m golem_proxy.live.observing`` (observer_launch.py's `TEST_MODULE`, set to
``tests.live.unlimited_observing``), so that a forwarding process run under ``RLIMIT_FSIZE``
finds its spool full while the recording this process writes grows as it would (for the tests
of a spool whose file system fills up)."""

from __future__ import annotations

import resource
import sys

from golem_proxy.live import observing

if __name__ == "__main__":
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    sys.exit(observing.main())
