"""``python -m golem_proxy`` is the ``golem-proxy`` command."""

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while the command is still loading: no import traceback
    raise SystemExit(130) from None

raise SystemExit(main())
