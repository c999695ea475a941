"""`/stratus <text>` → a typed command, or the usage message that explains what went wrong.

Pure: no Slack, no storage. A person types these in a hurry during an incident, so the parser
is forgiving where it can be (case of the verb, extra spaces, `#` or `INC-` prefixes typed in
any case) and precise where it cannot (a namespace that is not a DNS label is named as such
instead of being looked up and "not found").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class Verb(StrEnum):
    HELP = "help"
    STATUS = "status"
    INCIDENTS = "incidents"
    INCIDENT = "incident"
    DIAGNOSE = "diagnose"
    UNDO = "undo"
    DIGEST = "digest"
    POLICY = "policy"
    DECLARE = "declare"


#: One line of usage per verb, in the order `help` lists them.
USAGE: dict[Verb, str] = {
    Verb.HELP: "`/stratus help` — this list",
    Verb.STATUS: "`/stratus status [[cluster/]namespace]` — health per namespace: μ now, open "
    "incidents, pending approvals",
    Verb.INCIDENTS: "`/stratus incidents [--cluster <name>]` — open and recently closed incidents",
    Verb.INCIDENT: "`/stratus incident <id>` — an incident's summary and timeline",
    Verb.DIAGNOSE: "`/stratus diagnose <namespace>[/<service>]` — diagnose now (read-only)",
    Verb.UNDO: "`/stratus undo <transaction>` — undo a committed transaction",
    Verb.DIGEST: "`/stratus digest` — post a health digest of the last 24 hours here",
    Verb.POLICY: "`/stratus policy [namespace|all]` — autonomy, approvers and limits in force",
    Verb.DECLARE: "`/stratus declare <title> [namespace=<namespace>]` — open an incident by hand",
}

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
#: A cluster's name as STRATUS_CLUSTER_NAME gives it (kubeconfig names such as `gke_p_z_prod`).
_CLUSTER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_NAMESPACE_ARG = re.compile(r"(?:^|\s)(?:namespace|ns)=(\S*)", re.IGNORECASE)
TITLE_MAX = 150


@dataclass(frozen=True, slots=True, kw_only=True)
class Help:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Status:
    namespace: str | None = None
    cluster: str | None = None  # None: the cluster this bot serves


@dataclass(frozen=True, slots=True, kw_only=True)
class Incidents:
    cluster: str | None = None  # None: the cluster this bot serves


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowIncident:
    incident_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnose:
    namespace: str
    service: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Undo:
    transaction_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Digest:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowPolicy:
    namespace: str | None = None  # None: the channel's namespace, or all when it has none
    all: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Declare:
    title: str
    namespace: str | None = None  # None: the channel's namespace


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Not a command: what to tell the person instead (an ephemeral message)."""

    problem: str
    verb: Verb | None = None  # the verb they meant, when known: its usage line is shown


Command = Help | Status | Incidents | ShowIncident | Diagnose | Undo | Digest | ShowPolicy | Declare


def _namespace(value: str, verb: Verb) -> str | Usage:
    if _DNS_LABEL.match(value):
        return value
    return Usage(
        problem=f"`{value}` is not a namespace name (lowercase letters, digits and dashes).",
        verb=verb,
    )


def _no_more(verb: Verb, rest: list[str]) -> Usage | None:
    if rest:
        return Usage(problem=f"`{verb}` takes no more arguments than shown.", verb=verb)
    return None


def _parse_id(verb: Verb, rest: list[str], what: str) -> str | Usage:
    if len(rest) != 1:
        return Usage(problem=f"`{verb}` needs exactly one {what}.", verb=verb)
    value = rest[0].lstrip("#")
    if not _ID.match(value):
        return Usage(problem=f"`{value}` is not a valid {what}.", verb=verb)
    return value


def _parse_diagnose(rest: list[str]) -> Diagnose | Usage:
    if len(rest) != 1:
        return Usage(
            problem="`diagnose` needs one `namespace` or `namespace/service`.", verb=Verb.DIAGNOSE
        )
    namespace, _, service = rest[0].partition("/")
    ns = _namespace(namespace, Verb.DIAGNOSE)
    if isinstance(ns, Usage):
        return ns
    if not service:
        return Diagnose(namespace=ns)
    if not _DNS_LABEL.match(service):
        return Usage(problem=f"`{service}` is not a service name.", verb=Verb.DIAGNOSE)
    return Diagnose(namespace=ns, service=service)


def _parse_declare(raw: str) -> Declare | Usage:
    namespace: str | None = None
    found = _NAMESPACE_ARG.findall(raw)
    if len(found) > 1:
        return Usage(problem="Give `namespace=` at most once.", verb=Verb.DECLARE)
    if found:
        ns = _namespace(found[0], Verb.DECLARE)
        if isinstance(ns, Usage):
            return ns
        namespace = ns
    title = " ".join(_NAMESPACE_ARG.sub(" ", raw).split())
    if not title:
        return Usage(problem="`declare` needs a title saying what is wrong.", verb=Verb.DECLARE)
    if len(title) > TITLE_MAX:
        return Usage(
            problem=f"The title is {len(title)} characters; keep it under {TITLE_MAX}.",
            verb=Verb.DECLARE,
        )
    return Declare(title=title, namespace=namespace)


def _parse_help(rest: list[str]) -> Help | Usage:
    return _no_more(Verb.HELP, rest) or Help()


def _cluster(value: str, verb: Verb) -> str | Usage:
    if _CLUSTER.match(value):
        return value
    return Usage(problem=f"`{value}` is not a cluster name.", verb=verb)


def _parse_incidents(rest: list[str]) -> Incidents | Usage:
    """`incidents`, `incidents --cluster prod`, `incidents --cluster=prod` or `cluster=prod`."""
    if not rest:
        return Incidents()
    words = list(rest)
    head = words.pop(0)
    flag, eq, value = head.partition("=")
    if flag.lower() not in ("--cluster", "cluster"):
        return Usage(problem=f"`incidents` does not take `{head}`.", verb=Verb.INCIDENTS)
    if not eq:
        if not words:
            return Usage(problem="`--cluster` needs a cluster name.", verb=Verb.INCIDENTS)
        value = words.pop(0)
    found = _no_more(Verb.INCIDENTS, words) or _cluster(value, Verb.INCIDENTS)
    return found if isinstance(found, Usage) else Incidents(cluster=found)


def _parse_digest(rest: list[str]) -> Digest | Usage:
    return _no_more(Verb.DIGEST, rest) or Digest()


def _parse_status(rest: list[str]) -> Status | Usage:
    if len(rest) > 1:
        return Usage(problem="`status` takes at most one namespace.", verb=Verb.STATUS)
    if not rest:
        return Status()
    cluster, slash, namespace = rest[0].rpartition("/")
    ns = _namespace(namespace, Verb.STATUS)
    if isinstance(ns, Usage) or not slash:
        return ns if isinstance(ns, Usage) else Status(namespace=ns)
    named = _cluster(cluster, Verb.STATUS)
    return named if isinstance(named, Usage) else Status(namespace=ns, cluster=named)


def _parse_policy(rest: list[str]) -> ShowPolicy | Usage:
    if len(rest) > 1:
        return Usage(problem="`policy` takes at most one namespace, or `all`.", verb=Verb.POLICY)
    if not rest:
        return ShowPolicy()
    if rest[0].lower() == "all":
        return ShowPolicy(all=True)
    ns = _namespace(rest[0], Verb.POLICY)
    return ns if isinstance(ns, Usage) else ShowPolicy(namespace=ns)


def _parse_incident(rest: list[str]) -> ShowIncident | Usage:
    incident_id = _parse_id(Verb.INCIDENT, rest, "incident id")
    if isinstance(incident_id, Usage):
        return incident_id
    if incident_id.lower().startswith("inc-"):
        incident_id = "INC-" + incident_id[4:]
    return ShowIncident(incident_id=incident_id)


def _parse_undo(rest: list[str]) -> Undo | Usage:
    tx = _parse_id(Verb.UNDO, rest, "transaction id")
    return tx if isinstance(tx, Usage) else Undo(transaction_id=tx)


#: The parser of each verb's arguments (the words after it); `declare` reads the raw text.
_PARSERS: dict[Verb, Callable[[list[str]], Command | Usage]] = {
    Verb.HELP: _parse_help,
    Verb.STATUS: _parse_status,
    Verb.INCIDENTS: _parse_incidents,
    Verb.INCIDENT: _parse_incident,
    Verb.DIAGNOSE: _parse_diagnose,
    Verb.UNDO: _parse_undo,
    Verb.DIGEST: _parse_digest,
    Verb.POLICY: _parse_policy,
}


def parse_command(text: str) -> Command | Usage:
    """Parse what follows `/stratus`. Never raises."""
    words = text.split()
    if not words:
        return Help()
    head = words[0].lower()
    rest = words[1:]
    try:
        verb = Verb(head)
    except ValueError:
        return Usage(problem=f"Unknown command `{words[0]}`.")
    parser = _PARSERS.get(verb)
    if parser is not None:
        return parser(rest)
    return _parse_declare(text.strip()[len(words[0]) :])
