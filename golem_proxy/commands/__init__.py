"""Subcommands of ``golem-proxy``; see `golem_proxy.cli`."""
