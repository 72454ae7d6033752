"""Loopback TCP plumbing for the plain-Unix baselines of the benchmarks.

The baselines hand the two ends of one loopback TCP connection straight to
ordinary programs (`tar`, `cat`, `head`) as their stdout and stdin, so the
bytes take the same kernel path as a daemon's socket without a relay process
copying them in between.
"""

import socket
import subprocess
import threading
from typing import IO, Dict, Sequence, Tuple, Union

Output = Union[int, IO[bytes], None]


def connected_pair() -> Tuple[socket.socket, socket.socket]:
    """A (sender, receiver) pair of sockets joined by one loopback TCP connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    accepted: Dict[str, socket.socket] = {}
    t = threading.Thread(target=lambda: accepted.setdefault("c", listener.accept()[0]))
    t.start()
    sender = socket.create_connection(listener.getsockname())
    t.join()
    listener.close()
    return sender, accepted["c"]


def socket_pipeline(producer_argv: Sequence[str], consumer_argv: Sequence[str],
                    consumer_stdout: Output = subprocess.DEVNULL) -> None:
    """Runs `producer | consumer` with a loopback TCP connection as the pipe."""
    sender, receiver = connected_pair()
    consumer = subprocess.Popen(list(consumer_argv), stdin=receiver.fileno(),
                                stdout=consumer_stdout)
    producer = subprocess.Popen(list(producer_argv), stdout=sender.fileno())
    sender.close()
    receiver.close()
    if producer.wait() != 0 or consumer.wait() != 0:
        raise RuntimeError("baseline pipeline %s | %s failed" % (producer_argv[0],
                                                                  consumer_argv[0]))


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (for servers that take a
    fixed port: nginx, or a daemon whose start is being timed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port

