"""A small PromQL subset, evaluated over the simulator's history in lab time.

Supported (anything else raises `agents.errors.QueryError` quoting the query):

* instant vector selectors with label matchers: `m`, `m{a="x", b!="y", c=~"re", d!~"re"}`
  (the newest sample within 5 minutes, as Prometheus's lookback);
* range vectors only as arguments of `rate(v[d])` and `increase(v[d])` (`d` in s/m/h; counter
  resets handled; `increase` is `rate × d`);
* aggregations `sum`, `avg`, `min`, `max`, `count`, optionally `by (...)` or `without (...)`,
  before or after the argument;
* `histogram_quantile(φ, v)` over `_bucket` series (Prometheus's linear interpolation);
* number literals, parentheses, `+ - * /` between scalars and vectors (vector–vector matching
  one-to-one on all labels but `__name__`), and comparison filters `== != > < >= <=`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agents.errors import QueryError
from lab.sim.metrics import SeriesKey

LOOKBACK_S = 300.0

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)(?![a-zA-Z_:])
    | (?P<dur>\[\s*\d+[smhd]\s*\])
    | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
    | (?P<op>=~|!~|!=|==|>=|<=|[{}(),=+\-*/<>])
    )""",
    re.VERBOSE,
)
_AGGS = {"sum", "avg", "min", "max", "count"}
_DUR = {"s": 1, "m": 60, "h": 3600, "d": 86400}

Labels = dict[str, str]


@dataclass(slots=True)
class Vector:
    samples: list[tuple[Labels, float]]


@dataclass(slots=True)
class Range:
    name: str
    matchers: list[tuple[str, str, str]]
    seconds: float


Value = float | Vector | Range


class History(Protocol):
    """What the evaluator reads: `MetricStore`, or a view of it in another metric convention
    (`lab.sim.convention_view.ConventionView`)."""

    def names(self) -> set[str]: ...

    def keys(self, name: str) -> list[SeriesKey]: ...

    def samples(self, key: SeriesKey, t0: float, t1: float) -> list[tuple[float, float]]: ...

    def latest(self, key: SeriesKey, t: float, lookback_s: float) -> float | None: ...

    @property
    def generation(self) -> int:
        """Changes whenever a series enters or leaves the history."""
        ...


class _Parser:
    def __init__(self, query: str) -> None:
        self.query = query
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(query):
            if query[pos:].strip() == "":
                break
            m = _TOKEN.match(query, pos)
            if not m or m.end() == pos:
                raise QueryError(query, f"unexpected character at position {pos}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("eof", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise QueryError(self.query, f"expected {value!r}, found {tok[1] or 'end of query'!r}")
        self.i += 1
        return tok

    def fail(self, reason: str) -> QueryError:
        return QueryError(self.query, reason)


class Evaluator:
    def __init__(self, store: History) -> None:
        self.store = store
        #: The keys each selector matched, valid while the history's set of series is the
        #: same (`History.generation`): matching every series' labels at every evaluation was
        #: most of a selector's cost.
        self._matched: dict[tuple[tuple[str, str, str], ...], tuple[int, list[SeriesKey]]] = {}

    def evaluate(self, query: str, at: float) -> float | Vector:
        p = _Parser(query)
        if not p.tokens:
            raise QueryError(query, "empty query")
        node = self._expr(p)
        if p.peek()[0] != "eof":
            raise p.fail(f"unexpected {p.peek()[1]!r}")
        value = node(at)
        if isinstance(value, Range):
            raise p.fail("a range vector cannot be the result; wrap it in rate() or increase()")
        return value

    # Parsing builds closures over `at`; each takes the evaluation time.

    def _expr(self, p: _Parser) -> Callable[[float], Value]:
        left = self._add(p)
        while p.peek()[1] in ("==", "!=", ">", "<", ">=", "<="):
            op = p.take()[1]
            right = self._add(p)
            left = _binary(p, op, left, right)
        return left

    def _add(self, p: _Parser) -> Callable[[float], Value]:
        left = self._mul(p)
        while p.peek()[1] in ("+", "-"):
            op = p.take()[1]
            left = _binary(p, op, left, self._mul(p))
        return left

    def _mul(self, p: _Parser) -> Callable[[float], Value]:
        left = self._unary(p)
        while p.peek()[1] in ("*", "/"):
            op = p.take()[1]
            left = _binary(p, op, left, self._unary(p))
        return left

    def _unary(self, p: _Parser) -> Callable[[float], Value]:
        if p.peek()[1] == "-":
            p.take()
            inner = self._unary(p)
            return _binary(p, "*", lambda _t: -1.0, inner)
        return self._primary(p)

    def _primary(self, p: _Parser) -> Callable[[float], Value]:
        kind, text = p.peek()
        if kind == "num":
            p.take()
            number = float(text)
            return lambda _t: number
        if text == "(":
            p.take()
            inner = self._expr(p)
            p.take(")")
            return inner
        if kind == "ident" and text in _AGGS:
            return self._aggregation(p)
        if kind == "ident" and text in ("rate", "increase"):
            return self._rate(p)
        if kind == "ident" and text == "histogram_quantile":
            return self._quantile(p)
        if kind == "ident" and p.i + 1 < len(p.tokens) and p.tokens[p.i + 1][1] == "(":
            raise p.fail(f"function {text}() is not supported by the lab's PromQL subset")
        if kind == "ident" or text == "{":
            return self._selector(p)
        raise p.fail(f"unexpected {text or 'end of query'!r}")

    def _selector(self, p: _Parser) -> Callable[[float], Value]:
        name = ""
        if p.peek()[0] == "ident":
            name = p.take()[1]
        matchers: list[tuple[str, str, str]] = []
        if p.peek()[1] == "{":
            p.take()
            while p.peek()[1] != "}":
                label = p.take()
                if label[0] != "ident":
                    raise p.fail(f"expected a label name, found {label[1]!r}")
                op = p.take()[1]
                if op not in ("=", "!=", "=~", "!~"):
                    raise p.fail(f"unknown label matcher {op!r}")
                value = p.take()
                if value[0] != "str":
                    raise p.fail(f"expected a quoted string after {label[1]}{op}")
                matchers.append((label[1], op, _unquote(value[1])))
                if p.peek()[1] == ",":
                    p.take()
            p.take("}")
        if name:
            matchers.insert(0, ("__name__", "=", name))
        if not any(op in ("=", "=~") and v for _, op, v in matchers):
            raise p.fail("a selector needs a metric name or a non-empty matcher")
        if p.peek()[0] == "dur":
            text = p.take()[1].strip("[] ")
            seconds = float(text[:-1]) * _DUR[text[-1]]
            return lambda _t: Range(name=name, matchers=matchers, seconds=seconds)
        return lambda t: self._instant(matchers, t)

    def _keys(self, matchers: list[tuple[str, str, str]]) -> list[SeriesKey]:
        generation, selector = self.store.generation, tuple(matchers)
        cached = self._matched.get(selector)
        if cached is not None and cached[0] == generation:
            return cached[1]
        names = [v for lbl, op, v in matchers if lbl == "__name__" and op == "="]
        candidates = (
            self.store.keys(names[0])
            if names
            else [k for n in sorted(self.store.names()) for k in self.store.keys(n)]
        )
        keys = [k for k in candidates if _matches({"__name__": k[0], **dict(k[1])}, matchers)]
        self._matched[selector] = (generation, keys)
        return keys

    def _instant(self, matchers: list[tuple[str, str, str]], t: float) -> Vector:
        out = []
        for key in self._keys(matchers):
            value = self.store.latest(key, t, LOOKBACK_S)
            if value is not None:
                out.append(({"__name__": key[0], **dict(key[1])}, value))
        return Vector(out)

    def _rate(self, p: _Parser) -> Callable[[float], Value]:
        fn = p.take()[1]
        p.take("(")
        arg = self._expr(p)
        p.take(")")

        def run(t: float) -> Value:
            rng = arg(t)
            if not isinstance(rng, Range):
                raise p.fail(f"{fn}() expects a range vector such as metric[1m]")
            out = []
            for key in self._keys(rng.matchers):
                points = self.store.samples(key, t - rng.seconds, t)
                if len(points) < 2:
                    continue
                increase = 0.0
                for (_, prev), (_, cur) in itertools.pairwise(points):
                    increase += cur - prev if cur >= prev else cur
                span = points[-1][0] - points[0][0]
                if span <= 0:
                    continue
                rate = increase / span
                out.append((dict(key[1]), rate * rng.seconds if fn == "increase" else rate))
            return Vector(out)

        return run

    def _aggregation(self, p: _Parser) -> Callable[[float], Value]:
        op = p.take()[1]
        grouping: tuple[str, list[str]] | None = None
        if p.peek()[1] in ("by", "without"):
            grouping = self._grouping(p)
        p.take("(")
        arg = self._expr(p)
        p.take(")")
        if p.peek()[1] in ("by", "without"):
            if grouping is not None:
                raise p.fail("grouping given twice")
            grouping = self._grouping(p)

        def run(t: float) -> Value:
            value = arg(t)
            if not isinstance(value, Vector):
                raise p.fail(f"{op}() expects an instant vector")
            groups: dict[tuple[tuple[str, str], ...], list[float]] = defaultdict(list)
            for lbls, v in value.samples:
                if grouping is None:
                    kept: Labels = {}
                elif grouping[0] == "by":
                    kept = {k: lbls[k] for k in grouping[1] if k in lbls}
                else:
                    kept = {
                        k: v2 for k, v2 in lbls.items() if k not in grouping[1] and k != "__name__"
                    }
                groups[tuple(sorted(kept.items()))].append(v)
            fns: dict[str, Callable[[list[float]], float]] = {
                "sum": sum,
                "avg": lambda xs: sum(xs) / len(xs),
                "min": min,
                "max": max,
                "count": lambda xs: float(len(xs)),
            }
            return Vector([(dict(k), fns[op](vs)) for k, vs in sorted(groups.items())])

        return run

    def _grouping(self, p: _Parser) -> tuple[str, list[str]]:
        kind = p.take()[1]
        p.take("(")
        names: list[str] = []
        while p.peek()[1] != ")":
            tok = p.take()
            if tok[0] != "ident":
                raise p.fail(f"expected a label name in {kind}(...), found {tok[1]!r}")
            names.append(tok[1])
            if p.peek()[1] == ",":
                p.take()
        p.take(")")
        return kind, names

    def _quantile(self, p: _Parser) -> Callable[[float], Value]:
        p.take()
        p.take("(")
        phi_node = self._expr(p)
        p.take(",")
        arg = self._expr(p)
        p.take(")")

        def run(t: float) -> Value:
            phi = phi_node(t)
            value = arg(t)
            if not isinstance(phi, float) or not isinstance(value, Vector):
                raise p.fail("histogram_quantile(φ, v) expects a number and an instant vector")
            groups: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = defaultdict(list)
            for lbls, v in value.samples:
                if "le" not in lbls:
                    continue
                le = math.inf if lbls["le"] == "+Inf" else float(lbls["le"])
                rest = {k: x for k, x in lbls.items() if k not in ("le", "__name__")}
                groups[tuple(sorted(rest.items()))].append((le, v))
            return Vector(
                [(dict(k), _bucket_quantile(phi, sorted(b))) for k, b in sorted(groups.items())]
            )

        return run


def _bucket_quantile(phi: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus's histogram_quantile for one series' cumulative buckets."""
    if phi < 0:
        return -math.inf
    if phi > 1:
        return math.inf
    if not buckets or buckets[-1][0] != math.inf:
        return math.nan
    total = buckets[-1][1]
    if total <= 0:
        return math.nan
    rank = phi * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == math.inf:
                return prev_le
            if count == prev_count:
                return le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return buckets[-2][0] if len(buckets) > 1 else math.nan


def _matches(lbls: Labels, matchers: list[tuple[str, str, str]]) -> bool:
    for name, op, value in matchers:
        have = lbls.get(name, "")
        if op == "=" and have != value:
            return False
        if op == "!=" and have == value:
            return False
        if op == "=~" and not re.fullmatch(value, have):
            return False
        if op == "!~" and re.fullmatch(value, have):
            return False
    return True


def _unquote(text: str) -> str:
    return text[1:-1].encode().decode("unicode_escape")


_OPS: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b if b != 0 else (math.nan if a == 0 else math.copysign(math.inf, a)),
}
_CMPS: dict[str, Callable[[float, float], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}


def _binary(
    p: _Parser, op: str, left: Callable[[float], Value], right: Callable[[float], Value]
) -> Callable[[float], Value]:
    def run(t: float) -> Value:
        a, b = left(t), right(t)
        if isinstance(a, Range) or isinstance(b, Range):
            raise p.fail("range vectors cannot be operands; wrap them in rate() or increase()")
        if isinstance(a, float) and isinstance(b, float):
            if op in _CMPS:
                raise p.fail("comparisons between two numbers need the bool modifier")
            return _OPS[op](a, b)
        if isinstance(a, Vector) and isinstance(b, Vector):
            index = {_key(lb): v for lb, v in b.samples}
            out = []
            for lb, v in a.samples:
                other = index.get(_key(lb))
                if other is None:
                    continue
                if op in _CMPS:
                    if _CMPS[op](v, other):
                        out.append((lb, v))
                else:
                    out.append((_drop_name(lb), _OPS[op](v, other)))
            return Vector(out)
        vec, scalar, vec_left = (a, b, True) if isinstance(a, Vector) else (b, a, False)
        assert isinstance(vec, Vector) and isinstance(scalar, float)
        out = []
        for lb, v in vec.samples:
            x, y = (v, scalar) if vec_left else (scalar, v)
            if op in _CMPS:
                if _CMPS[op](x, y):
                    out.append((lb, v))
            else:
                out.append((_drop_name(lb), _OPS[op](x, y)))
        return Vector(out)

    return run


def _key(lbls: Labels) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in lbls.items() if k != "__name__"))


def _drop_name(lbls: Labels) -> Labels:
    return {k: v for k, v in lbls.items() if k != "__name__"}
