"""``python tcp_relay.py HOST PORT``: stdin/stdout to a TCP port, as a ProxyCommand does (Session Manager's plays
this part for real instances)."""
import socket
import sys
import threading


def main() -> None:
    sock = socket.create_connection((sys.argv[1], int(sys.argv[2])))

    def upstream() -> None:
        for chunk in iter(lambda: sys.stdin.buffer.read1(65536), b""):
            sock.sendall(chunk)
        sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    for chunk in iter(lambda: sock.recv(65536), b""):
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
