"""RBAC: who is asking (bearer tokens) and whether the Roles and bindings in the store let
them (the `rbac.authorization.k8s.io/v1` authorizer), evaluated for every resource request.

Why it exists: Stratus ships least-privilege RBAC, and `stratus doctor` asks the server about
each permission it needs. Without an enforcing server neither can be tested, only assumed.

The rules follow the real authorizer (`k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac`):

* a rule matches when its verbs, apiGroups and resources each contain the request's (or `*`);
  a resource is `plural` or `plural/subresource`, `*` matches every resource and subresource,
  `*/scale` any resource's scale; `resourceNames`, when set, must hold the request's name (so
  a named rule never grants list, watch or create, which carry no name);
* a ClusterRoleBinding grants its ClusterRole's rules everywhere; a RoleBinding grants its
  Role's (or ClusterRole's) rules only in its own namespace, never at the cluster scope;
* subjects are a User, a Group, or a ServiceAccount (the user
  `system:serviceaccount:NS:NAME`, in the groups `system:serviceaccounts`,
  `system:serviceaccounts:NS` and `system:authenticated`);
* the group `system:masters` may do everything (the lab's admin token is in it);
* every authenticated identity may create SelfSubjectAccessReviews and
  SelfSubjectRulesReviews and read discovery (the real `system:basic-user` and
  `system:discovery` roles; built in here rather than stored, so a fresh lab's objects and
  resourceVersions are what they were before RBAC existed).

Aggregated ClusterRoles (`aggregationRule`) are not evaluated: their rules are what is stored.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agents.model import JsonObject
from lab.kube.errors import BadRequest, Forbidden, Unauthorized
from lab.kube.store import Store

ADMIN_TOKEN = "lab-token"  # noqa: S105 — the lab's well-known admin token, not a secret
ADMIN_USER = "lab-admin"
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
RBAC_GROUP = "rbac.authorization.k8s.io"
REVIEW_GROUP = "authorization.k8s.io"

#: What every authenticated identity may do without a stored binding.
_BUILT_IN_RULES: tuple[JsonObject, ...] = (
    {
        "verbs": ["create"],
        "apiGroups": [REVIEW_GROUP],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    },
)
_BUILT_IN_NON_RESOURCE: tuple[JsonObject, ...] = (
    {
        "verbs": ["get"],
        "nonResourceURLs": [
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/healthz",
            "/livez",
            "/readyz",
            "/openapi",
            "/openapi/*",
            "/version",
            "/version/",
        ],
    },
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    user: str
    groups: tuple[str, ...]

    @property
    def is_master(self) -> bool:
        return MASTERS in self.groups


ADMIN = Identity(user=ADMIN_USER, groups=(MASTERS, AUTHENTICATED))


@dataclass(frozen=True, slots=True, kw_only=True)
class Attributes:
    """One resource request, as the authorizer sees it."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""  # "" at the cluster scope
    name: str = ""

    @property
    def combined(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def service_account_identity(namespace: str, name: str) -> Identity:
    return Identity(
        user=f"system:serviceaccount:{namespace}:{name}",
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


# ----------------------------------------------------------------------------- matching


def _has(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _resource_matches(rule: JsonObject, attrs: Attributes) -> bool:
    for resource in rule.get("resources") or []:
        if resource in ("*", attrs.combined):
            return True
        if attrs.subresource and resource == f"*/{attrs.subresource}":
            return True
    return False


def rule_allows(rule: JsonObject, attrs: Attributes) -> bool:
    names = rule.get("resourceNames") or []
    return (
        _has(rule.get("verbs"), attrs.verb)
        and _has(rule.get("apiGroups"), attrs.group)
        and _resource_matches(rule, attrs)
        and (not names or attrs.name in names)
    )


def _subject_matches(subject: JsonObject, identity: Identity) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == identity.user
    if kind == "Group":
        return subject.get("name") in identity.groups
    if kind == "ServiceAccount":
        user = f"system:serviceaccount:{subject.get('namespace', '')}:{subject.get('name', '')}"
        return user == identity.user
    return False


def _subject_text(subject: JsonObject) -> str:
    if subject.get("kind") == "ServiceAccount":
        return f'ServiceAccount "{subject.get("namespace", "")}/{subject.get("name", "")}"'
    return f'{subject.get("kind", "")} "{subject.get("name", "")}"'


@dataclass(frozen=True, slots=True)
class _Grant:
    """The rules one binding gives the identity, and where (None: every namespace and the
    cluster scope)."""

    namespace: str | None
    rules: list[JsonObject]
    why: str  # "RoleBinding "ns/name" of ClusterRole "x" to ServiceAccount "ns/sa""


class Authorizer:
    """Bearer tokens → identities, and RBAC decisions over the objects in `store`."""

    def __init__(self, store: Store, *, seed: str = "lab") -> None:
        self._store = store
        self._seed = seed
        self._lock = threading.Lock()
        self._tokens: dict[str, Identity] = {ADMIN_TOKEN: ADMIN}
        #: Called with every decision on a request (tests record what an identity used).
        self.observers: list[Callable[[Identity, Attributes, bool], None]] = []

    # ------------------------------------------------------------------------ identities

    def issue_token(self, identity: Identity) -> str:
        """A bearer token for `identity` (the same identity always gets the same token)."""
        digest = hashlib.sha256(f"{self._seed}\0{identity.user}".encode()).hexdigest()[:32]
        token = f"lab-{digest}"
        with self._lock:
            self._tokens[token] = identity
        return token

    def service_account_token(self, namespace: str, name: str) -> str:
        return self.issue_token(service_account_identity(namespace, name))

    def authenticate(self, authorization: str) -> Identity:
        """No Authorization header is the lab's admin (every client the lab had before RBAC
        sends none or the admin token); a bearer token the lab never issued is a 401."""
        if not authorization:
            return ADMIN
        scheme, _, token = authorization.partition(" ")
        with self._lock:
            identity = self._tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if identity is None:
            raise Unauthorized("Unauthorized")
        return identity

    # ------------------------------------------------------------------------ decisions

    def _grants(self, identity: Identity) -> Iterator[_Grant]:
        yield _Grant(None, list(_BUILT_IN_RULES), f'built-in rules for Group "{AUTHENTICATED}"')
        store = self._store
        for kind in ("ClusterRoleBinding", "RoleBinding"):
            for binding in store.iter_objects(kind):
                subject = next(
                    (
                        s
                        for s in binding.get("subjects") or []
                        if isinstance(s, dict) and _subject_matches(s, identity)
                    ),
                    None,
                )
                if subject is None:
                    continue
                meta = binding.get("metadata") or {}
                namespace = meta.get("namespace", "") if kind == "RoleBinding" else None
                ref = binding.get("roleRef") or {}
                role_kind, role_name = ref.get("kind", ""), ref.get("name", "")
                if role_kind == "ClusterRole":
                    role = store.get("ClusterRole", "", role_name)
                elif role_kind == "Role" and namespace:
                    role = store.get("Role", namespace, role_name)
                else:
                    role = None
                if role is None:
                    continue
                where = f"{namespace}/{meta.get('name', '')}" if namespace else meta.get("name")
                why = f'{kind} "{where}" of {role_kind} "{role_name}" to {_subject_text(subject)}'
                rules = [r for r in role.obj.get("rules") or [] if isinstance(r, dict)]
                yield _Grant(namespace, rules, why)

    def decide(self, identity: Identity, attrs: Attributes) -> tuple[bool, str]:
        """Whether `identity` may do it, and the reason an access review reports."""
        if identity.is_master:
            return True, ""
        for grant in self._grants(identity):
            if grant.namespace is not None and grant.namespace != attrs.namespace:
                continue
            if any(rule_allows(rule, attrs) for rule in grant.rules):
                return True, f"RBAC: allowed by {grant.why}"
        return False, ""

    def authorize(self, identity: Identity, attrs: Attributes) -> None:
        """Raises the real server's 403 when `identity` may not do it."""
        allowed, _ = self.decide(identity, attrs)
        for observer in list(self.observers):
            observer(identity, attrs, allowed)
        if not allowed:
            raise forbidden(identity, attrs)

    # ------------------------------------------------------------------------ reviews

    def access_review(self, identity: Identity, body: Any) -> JsonObject:
        """Answer a SelfSubjectAccessReview (authorization.k8s.io/v1) about `identity`."""
        spec = body.get("spec") if isinstance(body, dict) else None
        if not isinstance(spec, dict):
            raise BadRequest("SelfSubjectAccessReview: spec is required")
        resource = spec.get("resourceAttributes")
        non_resource = spec.get("nonResourceAttributes")
        if isinstance(resource, dict) == isinstance(non_resource, dict):
            raise BadRequest(
                'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
                "spec.resourceAttributes: Invalid value: exactly one of "
                "nonResourceAttributes or resourceAttributes must be specified"
            )
        if isinstance(resource, dict):
            attrs = Attributes(
                verb=str(resource.get("verb", "")),
                group=str(resource.get("group", "")),
                resource=str(resource.get("resource", "")),
                subresource=str(resource.get("subresource", "")),
                namespace=str(resource.get("namespace", "")),
                name=str(resource.get("name", "")),
            )
            allowed, reason = self.decide(identity, attrs)
        else:
            assert isinstance(non_resource, dict)
            allowed = identity.is_master or self._non_resource_allowed(
                str(non_resource.get("verb", "")), str(non_resource.get("path", ""))
            )
            reason = ""
        status: JsonObject = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": f"{REVIEW_GROUP}/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }

    def rules_review(self, identity: Identity, body: Any) -> JsonObject:
        """Answer a SelfSubjectRulesReview: every rule that applies in `spec.namespace`."""
        spec = body.get("spec") if isinstance(body, dict) else None
        namespace = spec.get("namespace", "") if isinstance(spec, dict) else ""
        if not namespace:
            raise BadRequest("no namespace on request")
        resource_rules: list[JsonObject] = []
        if identity.is_master:
            resource_rules.append({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
            non_resource: list[JsonObject] = [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
        else:
            for grant in self._grants(identity):
                if grant.namespace in (None, namespace):
                    resource_rules.extend(_resource_rule(r) for r in grant.rules)
            non_resource = [dict(r) for r in _BUILT_IN_NON_RESOURCE]
        return {
            "kind": "SelfSubjectRulesReview",
            "apiVersion": f"{REVIEW_GROUP}/v1",
            "metadata": {"creationTimestamp": None},
            "spec": {"namespace": namespace},
            "status": {
                "resourceRules": [r for r in resource_rules if r["resources"]],
                "nonResourceRules": non_resource,
                "incomplete": False,
            },
        }

    @staticmethod
    def _non_resource_allowed(verb: str, path: str) -> bool:
        for rule in _BUILT_IN_NON_RESOURCE:
            if verb not in rule["verbs"]:
                continue
            for url in rule["nonResourceURLs"]:
                if url == path or (url.endswith("*") and path.startswith(url[:-1])):
                    return True
        return False


def _resource_rule(rule: JsonObject) -> JsonObject:
    out: JsonObject = {
        "verbs": list(rule.get("verbs") or []),
        "apiGroups": list(rule.get("apiGroups") or []),
        "resources": list(rule.get("resources") or []),
    }
    if rule.get("resourceNames"):
        out["resourceNames"] = list(rule["resourceNames"])
    return out


def forbidden(identity: Identity, attrs: Attributes) -> Forbidden:
    """The real server's 403 (`responsewriters.Forbidden`): the Status names the group and
    resource (without subresource) and the name, the message says who could not do what."""
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    why = (
        f'User "{identity.user}" cannot {attrs.verb} resource "{attrs.combined}" '
        f'in API group "{attrs.group}" {where}'
    )
    resource = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    prefix = f'{resource} "{attrs.name}"' if attrs.name else resource
    return Forbidden(
        f"{prefix} is forbidden: {why}",
        name=attrs.name,
        group=attrs.group,
        kind=attrs.resource,
    )
