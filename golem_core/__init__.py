"""golem_core: the sans-IO heart of golem-proxy.

Framing, the message model, protocol profiles (each with its contract rules), the error-code
registry, request/response pairing, an observed connection (`connection`: decode, type, check
and pair both directions of one connection) and the dispatcher. Pure and stdlib-only so it
also runs inside Rhino's embedded Python 3.9: bytes in, events out; no sockets, no threads, no
logging.
"""

__version__ = "0.1.0"
