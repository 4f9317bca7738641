"""TCP ports on 127.0.0.1 for the servers that tests, the demo and the bench
start.  Standard library only."""
import socket


def free_port(used=None):
    """A TCP port on 127.0.0.1 that nothing listens on now; when used (a set)
    is given, also one not in it, and it is added there."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if used is None:
            return port
        if port not in used:
            used.add(port)
            return port


def port_is_free(port):
    """Whether a server could bind port on 127.0.0.1 now."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
