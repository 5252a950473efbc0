"""golem_core: the sans-IO heart of golem-proxy.

Framing, the message model, protocol profiles, contract rules, the error-code registry and the
dispatcher. Pure and stdlib-only so it also runs inside Rhino's embedded Python 3.9: bytes in,
events out; no sockets, no threads, no logging.
"""

__version__ = "0.1.0"
