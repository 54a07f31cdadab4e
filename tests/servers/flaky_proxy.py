"""A TCP proxy on 127.0.0.1 that cuts connections, for the tests of dropped transfers.

Usage: flaky_proxy.py LISTEN_PORT TARGET_PORT (down|up) BYTES [DELAY_MS]
Forwards every connection to 127.0.0.1:TARGET_PORT. Once a connection has carried BYTES
bytes in the given direction (down: server to client, a download; up: client to server, an
upload), the proxy closes both sides mid-transfer. With DELAY_MS, it sleeps that long before
forwarding each 64 KiB, so a transfer takes a while (BYTES 0 then means: never cut).
"""
import socket
import sys
import threading
import time

listen_port, target_port, direction, limit = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
delay = int(sys.argv[5]) / 1000 if len(sys.argv) > 5 else 0


def pipe(src, dst, cut, both):
    carried = 0
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if delay:
                time.sleep(delay)
            if cut and limit and carried + len(data) > limit:
                dst.sendall(data[: max(0, limit - carried)])
                break
            carried += len(data)
            dst.sendall(data)
    except OSError:
        pass
    for s in both:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", listen_port))
server.listen(64)
while True:
    client, _ = server.accept()
    upstream = socket.create_connection(("127.0.0.1", target_port))
    both = (client, upstream)
    threading.Thread(target=pipe, args=(client, upstream, direction == "up", both), daemon=True).start()
    threading.Thread(target=pipe, args=(upstream, client, direction == "down", both), daemon=True).start()
