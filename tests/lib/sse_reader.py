"""Reads a Server-Sent Events response on a background thread."""

import http.client
import json
import queue
import socket
import threading


class SseStream:
    """GETs `path` from `daemon`; events arrive in `self.events` as
    (event, data, id) tuples, and None when the stream ends."""

    def __init__(self, daemon, path, timeout=30):
        self.conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=timeout)
        self.conn.request("GET", path, headers=daemon.headers())
        self.sock = self.conn.sock  # the response's reader keeps it open otherwise
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.events = queue.Queue()
        if self.status == 200:
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()
        else:
            self.body = json.loads(self.resp.read())

    def _read(self):
        event, data, ident = "message", [], None
        try:
            while True:
                line = self.resp.readline()
                if not line:
                    break
                line = line.rstrip(b"\r\n").decode()
                if line == "":
                    if data:
                        self.events.put((event, "\n".join(data), ident))
                    event, data = "message", []
                elif line.startswith(":"):
                    continue
                else:
                    field, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if field == "event":
                        event = value
                    elif field == "data":
                        data.append(value)
                    elif field == "id":
                        ident = value
        except (OSError, ValueError, AttributeError):  # closed under us
            pass
        self.events.put(None)

    def next(self, timeout=10):
        """The next (event, parsed data, id), or None at the end."""
        item = self.events.get(timeout=timeout)
        if item is None:
            return None
        return item[0], json.loads(item[1]), item[2]

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()
