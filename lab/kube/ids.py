"""Identifiers and addresses from one seeded generator.

uids, generated name suffixes, cluster IPs, node ports, pod IPs and container ids all come
from here, so two runs with the same seed and the same calls produce the same objects.
"""

from __future__ import annotations

import hashlib
import ipaddress
import random
import threading
import uuid

#: The alphabet the real server uses for generated names (no vowels, no look-alikes).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class Ids:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._used_ips: set[str] = set()
        self._used_ports: set[int] = set()

    def uid(self) -> str:
        with self._lock:
            return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def suffix(self, length: int = 5) -> str:
        with self._lock:
            return "".join(self._rng.choice(NAME_ALPHABET) for _ in range(length))

    def hex(self, length: int) -> str:
        with self._lock:
            return f"{self._rng.getrandbits(4 * length):0{length}x}"

    def choice_index(self, n: int) -> int:
        with self._lock:
            return self._rng.randrange(n)

    # -------------------------------------------------------------- services

    def cluster_ip(self) -> str:
        """A free address in 10.96.0.0/16 (10.96.0.1 and .10 are the API and DNS)."""
        with self._lock:
            while True:
                candidate = f"10.96.{self._rng.randrange(0, 256)}.{self._rng.randrange(1, 255)}"
                if candidate not in self._used_ips and candidate not in ("10.96.0.1", "10.96.0.10"):
                    self._used_ips.add(candidate)
                    return candidate

    def reserve_ip(self, ip: str) -> None:
        with self._lock:
            self._used_ips.add(ip)

    def release_ip(self, ip: str) -> None:
        with self._lock:
            self._used_ips.discard(ip)

    def node_port(self) -> int:
        with self._lock:
            while True:
                candidate = self._rng.randrange(30000, 32768)
                if candidate not in self._used_ports:
                    self._used_ports.add(candidate)
                    return candidate

    def release_port(self, port: int) -> None:
        with self._lock:
            self._used_ports.discard(port)


class PodAddresses:
    """Pod IPs from each node's /24, handed out in order and reused after release."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: dict[str, list[str]] = {}
        self._cidrs: dict[str, str] = {}

    def add_node(self, node: str, cidr: str) -> None:
        with self._lock:
            if node in self._cidrs:
                return
            self._cidrs[node] = cidr
            network = ipaddress.ip_network(cidr, strict=False)
            hosts = [str(h) for h in network.hosts()][1:]  # .1 is the node's bridge
            hosts.reverse()
            self._free[node] = hosts

    def allocate(self, node: str) -> str:
        with self._lock:
            free = self._free.get(node)
            if not free:
                raise RuntimeError(f"no pod addresses left on node {node}")
            return free.pop()

    def release(self, node: str, ip: str) -> None:
        with self._lock:
            # Released addresses go to the back of the line, as host-local IPAM hands them out
            # round-robin: a new pod rarely gets the address a dead one just had.
            if node in self._free and ip not in self._free[node]:
                self._free[node].insert(0, ip)


def digest(text: str) -> str:
    """A stable sha256 hex digest (image ids, container ids derived from names)."""
    return hashlib.sha256(text.encode()).hexdigest()


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """rand.SafeEncodeString: map each character onto the generated-name alphabet."""
    return "".join(NAME_ALPHABET[ord(ch) % len(NAME_ALPHABET)] for ch in text)
