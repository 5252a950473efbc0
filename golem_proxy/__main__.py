"""``python -m golem_proxy`` is the ``golem-proxy`` command."""

from .cli import main

raise SystemExit(main())
