"""tests/apps/resp_client.py - the Redis-protocol client the jiffy-kv tests share.

Owns: encoding a command (cmd), a blocking connection that reads one reply at a time (Conn:
bulk strings as bytes, nil as None, arrays as lists, simple strings, integers and errors as their
raw line, prefix included), and a port free for both TCP and UDP on 127.0.0.1 (free_port).
"""
import socket


def free_port():
    while True:
        t = socket.socket()
        t.bind(("127.0.0.1", 0))
        p = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", p))
            return p
        except OSError:
            pass
        finally:
            t.close()
            u.close()


def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    """A blocking RESP client that reads one reply at a time."""

    def __init__(self, port, timeout=5.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("closed by the server")
            self.buf += d
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self._line()
        if line[:1] == b"$":
            n = int(line[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                d = self.s.recv(65536)
                if not d:
                    raise ConnectionError("closed mid-reply")
                self.buf += d
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v
        if line[:1] == b"*":
            return [self.reply() for _ in range(int(line[1:]))]
        return line

    def call(self, *args):
        self.s.sendall(cmd(*args))
        return self.reply()

    def close(self):
        self.s.close()
