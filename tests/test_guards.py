import socket

import pytest


def test_connection_leaving_loopback_is_refused() -> None:
    with pytest.raises(OSError, match="leaves loopback"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)


def test_lookup_of_a_public_name_is_refused() -> None:
    with pytest.raises(OSError, match="leaves loopback"):
        socket.getaddrinfo("slack.com", 443)


def test_loopback_is_allowed() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=1)
    client.close()
    server.close()
