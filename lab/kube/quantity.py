"""Kubernetes resource quantities ("250m", "1.5", "128Mi", "1G") as numbers.

The scheduler compares requests with node allocatable, quota admission sums requests, and the
kubelet model compares a container's memory with its limit; all of them need the numeric value.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}

_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$")


def parse(text: str) -> Decimal:
    """The value of a quantity. Raises ValueError for malformed text."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise ValueError(f"quantities must match the regular expression {_QUANTITY.pattern!r}")
    number, suffix = match.groups()
    if suffix and ("e" in number or "E" in number):
        raise ValueError("a quantity has either an exponent or a suffix")
    try:
        return Decimal(number) * _SUFFIXES[suffix]
    except InvalidOperation:
        raise ValueError(f"invalid quantity {text!r}") from None


def is_valid(text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


def millis(text: str | None) -> int:
    """CPU in millicores (0 when absent or malformed)."""
    if not text:
        return 0
    try:
        return int((parse(text) * 1000).to_integral_value(rounding="ROUND_CEILING"))
    except ValueError:
        return 0


def value(text: str | None) -> int:
    """An integral quantity (bytes, pods, counts), rounded up (0 when absent or malformed)."""
    if not text:
        return 0
    try:
        return int(parse(text).to_integral_value(rounding="ROUND_CEILING"))
    except ValueError:
        return 0


def format_millis(m: int) -> str:
    """Canonical CPU text: whole cores without a suffix, else millicores ("1", "1500m")."""
    return str(m // 1000) if m % 1000 == 0 else f"{m}m"


def format_bytes(n: int) -> str:
    """Canonical binary text as the real server prints it ("128Mi", "1Gi", "1000")."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = int(_SUFFIXES[suffix])
        if n and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def is_cpu_like(resource: str) -> bool:
    """Resources measured in millis (cpu, requests.cpu, limits.cpu)."""
    return resource == "cpu" or resource.endswith(".cpu")
