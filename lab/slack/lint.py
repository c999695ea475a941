"""What an on-call engineer should never read in a message: a line said twice, a raw user id,
an emoji code the workspace cannot show, "1 pods".

`message_problems` reads a message (or a modal, or the App Home view) as the workspace stores
it and returns one sentence per problem, so a test can assert on a whole channel at once and
say exactly what is wrong. The rules are deliberately narrow: each names a defect that has
shipped before, not a style preference.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from lab.slack.emoji import unknown_emoji

#: Code spans, code blocks, mentions and links: their text is not prose.
_NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|<[^>\n]*>", re.DOTALL)
_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
_MENTION_OR_LINK = re.compile(r"<[^>\n]*>")
_USER_ID = re.compile(r"\b[UW][A-Z0-9]{8,10}\b")
#: "1 pods": a count of one before a plural noun (words that end in s in the singular aside).
_ONE_PLURAL = re.compile(r"(?<![\d.,/:×x])\b1 ([a-z]{2,}s)\b")
_SINGULAR_S = frozenset(
    {
        "is", "was", "has", "this", "its", "status", "bus", "us", "plus", "less", "loss",
        "access", "process", "ingress", "egress", "class", "across", "always", "ms", "dns",
        "as", "alias", "canvas", "yes", "does", "goes", "address", "success", "miss", "pass",
    }
)  # fmt: skip
#: "2 pod": a count other than one before a singular noun Stratus counts.
_MANY_SINGULAR = re.compile(
    r"(?<![\d.,/:])\b(0|[2-9]|\d{2,}) (pod|alert|service|item|object|action|node|replica|"
    r"minute|second|incident|transaction|approval|change|read|attempt|step)\b(?![-\w])"
)
#: A phrase said twice in a row: "geo: geo:", "(A, B) (A, B)".
_STUTTER = re.compile(r"(?<![\w])([^\s`][^\n]{1,80}?)\s*\1(?![\w])")
#: Lines, and the halves of "headline — explanation" (the offline reasoner's summary).
_SHORT_UNIT = re.compile(r"^(\S+:|\([^()]*\))$")
_CLAUSE_SPLIT = re.compile(r"\n| — ")
#: Lines shorter than this may repeat ("μ0 12", "Risk").
_CLAUSE_MIN = 24


def texts(value: Any) -> Iterator[str]:
    """Every text a person reads in blocks: mrkdwn and plain_text objects, in order."""
    if isinstance(value, Mapping):
        if value.get("type") in ("mrkdwn", "plain_text") and isinstance(value.get("text"), str):
            yield value["text"]
            return
        for key, item in value.items():
            if key in ("value", "action_id", "block_id", "private_metadata", "callback_id"):
                continue
            if key == "confirm":  # a dialog shown after a click, not part of the message
                continue
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def _prose(text: str) -> str:
    return _NOT_PROSE.sub(" ", text)


def text_problems(text: str) -> list[str]:
    """Problems within one text (a section, a field, a context element)."""
    problems: list[str] = []
    prose = _prose(text)
    for user_id in _USER_ID.findall(prose):
        problems.append(f"raw user id {user_id} (not a <@mention>)")
    for name in unknown_emoji(text):
        problems.append(f"emoji :{name}: is unknown to the workspace")
    for noun in _ONE_PLURAL.findall(prose):
        if noun not in _SINGULAR_S:
            problems.append(f"'1 {noun}' (plural after one)")
    for match in _MANY_SINGULAR.finditer(prose):
        problems.append(f"'{match.group(0)}' (singular after {match.group(1)})")
    # Code spans count here: "`geo` network (61%); `search` network (61%)" is no stutter.
    spoken = _MENTION_OR_LINK.sub(" ", _CODE_BLOCK.sub(" ", text)).replace("`", "")
    for match in _STUTTER.finditer(spoken):
        unit = match.group(1)
        # A word or a parenthesis said twice ("geo: geo:", "(A, B) (A, B)"); a longer phrase
        # repeated is the cluster's own text ("rpc error: … desc = rpc error: … desc =").
        if len(unit.strip()) >= 3 and re.search(r"[A-Za-z]", unit) and _SHORT_UNIT.match(unit):
            problems.append(f"'{unit.strip()}' twice in a row")
    return problems


def message_problems(message: Mapping[str, Any]) -> list[str]:
    """Problems in a message, modal or Home view (blocks, and the text when no blocks)."""
    blocks = message.get("blocks")
    shown = list(texts(blocks)) if blocks else [str(message.get("text") or "")]
    problems = [p for text in shown for p in text_problems(text)]
    # Code spans stay: "• *Errors* on `geo`" and "• *Errors* on `rate`" are two lines.
    clauses = Counter(
        clause.strip(" *_:·")
        for text in shown
        for clause in _CLAUSE_SPLIT.split(_MENTION_OR_LINK.sub(" ", text))
        if len(clause.strip(" *_:·")) >= _CLAUSE_MIN
    )
    problems.extend(f"'{c}' said {n} times" for c, n in clauses.items() if n > 1)
    return problems
