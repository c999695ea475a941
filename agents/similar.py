"""Similar past incidents: BM25 over what closed incidents turned out to be.

Each closed incident is a document made of its title, the service that was the root cause,
the fault category, its summary, its latest diagnosis (summary and evidence lines) and its
resolution. A new incident's text (alerts, first evidence) is the query.

Incident text is full of tokens a plain word tokenizer gets wrong, so the index has two
fields, scored separately and blended:

* **words**, normalised: lowercase, camelCase split ("OOMKilled" → oom, kill, oomkilled),
  HTTP status codes folded into their class ("500", "503" → 5xx, matching "5xx"), a light
  plural/tense stemmer, stop words and pod-hash-like tokens ("7d9c6b5f4") dropped;
* **character 3- to 5-grams** of those words, which let "crashloop" meet "crashloopbackoff"
  and "timeout" meet "timeouts" whatever the stemmer did.

Scores are normalised to 0..1 per field by the score the query would get against itself as a
document: an incident described exactly the same way scores 1, one that shares only a common
word scores little, and terms the corpus has never seen lower the score (they are part of the
description that nothing matches). Building is incremental and
queries walk posting lists only: a few thousand incidents cost milliseconds.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.model import IncidentId, SimilarIncident
from storage import Store
from storage.records import StoredIncident

logger = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
WORD_WEIGHT = 0.6  # the n-gram field gets the rest

_RAW = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b)|[A-Z]?[a-z]+|[A-Z]+|\d+[a-z]*")
_STATUS = re.compile(r"^[1-5]\d\d$")
_STOP = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "the",
        "to",
        "was",
        "were",
        "will",
        "with",
        "this",
        "that",
        "than",
        "then",
        "there",
    }
)


def _stem(word: str) -> str:
    if len(word) <= 4 or not word.isalpha():
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("ing") and len(word) > 6:
        return word[:-3]
    if word.endswith("ed") and len(word) > 5:
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _random_looking(token: str) -> bool:
    """Pod and ReplicaSet hash suffixes ("7d9c6b5f4", "x2kq9") say nothing about a fault."""
    digits = sum(c.isdigit() for c in token)
    return len(token) >= 5 and digits >= 2 and len(token) - digits >= 2


def words(text: str) -> list[str]:
    """The normalised word tokens of `text` (see the module docstring)."""
    out: list[str] = []
    for raw in _RAW.findall(text):
        lower = raw.lower()
        if _random_looking(lower):
            continue
        if _STATUS.match(lower):
            out += [lower, f"{lower[0]}xx"]
            continue
        parts = [p.lower() for p in _CAMEL.findall(raw)]
        candidates = [lower, *parts] if len(parts) > 1 else [lower]
        for token in candidates:
            if token in _STOP or len(token) < 2:
                continue
            out.append(_stem(token))
    return out


def ngrams(tokens: Iterable[str], low: int = 3, high: int = 5) -> list[str]:
    out: list[str] = []
    for token in tokens:
        padded = f"_{token}_"
        for n in range(low, high + 1):
            out += [padded[i : i + n] for i in range(len(padded) - n + 1)]
    return out


# --------------------------------------------------------------------------------- BM25


@dataclass(slots=True)
class _Field:
    """One BM25 field: posting lists, document lengths, document frequencies."""

    postings: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)
    total: int = 0

    def add(self, doc: int, terms: list[str]) -> None:
        for term, tf in Counter(terms).items():
            self.postings.setdefault(term, []).append((doc, tf))
        self.lengths.append(len(terms))
        self.total += len(terms)

    def idf(self, term: str) -> float:
        n = len(self.lengths)
        df = len(self.postings.get(term, ()))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: list[str]) -> dict[int, float]:
        """Normalised scores (0..1) of the documents that share a term with `query`: each
        score is divided by the one the query itself would get as a document, so a document
        saying exactly what the query says scores 1."""
        terms = Counter(query)
        if not terms or not self.lengths:
            return {}
        average = self.total / len(self.lengths) or 1.0
        query_norm = K1 * (1.0 - B + B * len(query) / average)
        ceiling = sum(self.idf(t) * tf * (K1 + 1.0) / (tf + query_norm) for t, tf in terms.items())
        acc: dict[int, float] = {}
        for term in terms:
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for doc, tf in postings:
                norm = K1 * (1.0 - B + B * self.lengths[doc] / average)
                acc[doc] = acc.get(doc, 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
        return {doc: min(1.0, s / ceiling) for doc, s in acc.items()} if ceiling > 0 else {}


class Bm25Index:
    """Documents by key; `search` returns (key, score 0..1), best first."""

    def __init__(self) -> None:
        self._keys: list[str] = []
        self._positions: dict[str, int] = {}
        self._words = _Field()
        self._grams = _Field()

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._positions

    def add(self, key: str, text: str) -> None:
        if key in self._positions:
            return  # closed incidents do not change
        doc = len(self._keys)
        self._keys.append(key)
        self._positions[key] = doc
        tokens = words(text)
        self._words.add(doc, tokens)
        self._grams.add(doc, ngrams(tokens))

    def search(
        self, text: str, *, limit: int = 3, exclude: Collection[str] = (), min_score: float = 0.0
    ) -> list[tuple[str, float]]:
        tokens = words(text)
        by_words = self._words.scores(tokens)
        by_grams = self._grams.scores(ngrams(tokens))
        blended = {
            doc: WORD_WEIGHT * by_words.get(doc, 0.0) + (1 - WORD_WEIGHT) * by_grams.get(doc, 0.0)
            for doc in by_words.keys() | by_grams.keys()
        }
        ranked = sorted(
            ((self._keys[doc], round(score, 4)) for doc, score in blended.items()),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return [(k, s) for k, s in ranked if k not in exclude and s >= min_score][:limit]


# ----------------------------------------------------------------------- over storage


def _evidence_lines(body: Mapping[str, Any]) -> list[str]:
    """Summaries from a stored diagnosis body, read leniently (its shape is the diagnosis
    package's to decide): `summary`, and `evidence[].summary`."""
    lines = [str(body["summary"])] if isinstance(body.get("summary"), str) else []
    evidence = body.get("evidence")
    for item in evidence if isinstance(evidence, list) else []:
        if isinstance(item, dict) and isinstance(item.get("summary"), str):
            lines.append(item["summary"])
    return lines


class SimilarIncidents:
    """Similar-incident search over the closed incidents in storage.

    The index is built on first use and extended with incidents closed since, on every
    search (one query for the list, one per newly closed incident for its diagnosis)."""

    def __init__(
        self,
        store: Store,
        *,
        corpus_limit: int = 5000,
        min_score: float = 0.1,
        cluster: str | None = None,
    ) -> None:
        self._store = store
        self._corpus_limit = corpus_limit
        self._min_score = min_score
        self._cluster = cluster
        self._index = Bm25Index()
        self._rows: dict[str, StoredIncident] = {}

    def document(self, row: StoredIncident) -> str:
        """The text an incident is indexed by."""
        parts = [row.title, row.service or "", row.summary or "", row.resolution or ""]
        # The root cause and the category are what a match should hinge on: counted twice.
        for key in (row.root_cause_service, row.category):
            if key:
                parts += [key, key.replace("/", " ").replace("_", " ")]
        diagnosis = self._store.diagnoses.latest(row.id)
        if diagnosis is not None:
            parts += [diagnosis.summary, *_evidence_lines(diagnosis.body)]
        return "\n".join(p for p in parts if p)

    def refresh(self) -> int:
        """Index incidents closed since the last refresh; returns the corpus size."""
        for row in self._store.incidents.list_closed(
            limit=self._corpus_limit, cluster=self._cluster
        ):
            if row.id not in self._index:
                self._rows[row.id] = row
                self._index.add(row.id, self.document(row))
        return len(self._index)

    def search(
        self, text: str, *, exclude: Collection[str] | str | None = None, limit: int = 3
    ) -> list[SimilarIncident]:
        """The closed incidents most like `text`, best first, with scores in 0..1 (those
        under `min_score` are left out)."""
        self.refresh()
        excluded = {exclude} if isinstance(exclude, str) else set(exclude or ())
        hits = self._index.search(text, limit=limit, exclude=excluded, min_score=self._min_score)
        return [self._similar(self._rows[key], score) for key, score in hits]

    @staticmethod
    def _similar(row: StoredIncident, score: float) -> SimilarIncident:
        return SimilarIncident(
            incident_id=IncidentId(row.id),
            title=row.title,
            score=score,
            root_cause_service=row.root_cause_service,
            category=row.category,
            resolution=row.resolution,
            closed_at=row.closed_at,
        )
