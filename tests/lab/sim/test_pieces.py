"""Small pieces of the simulator: data plane, flag reading, env resolution, quantities."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import pytest

from lab.apps import load_app
from lab.clock import LAB_EPOCH
from lab.sim.dataplane import AuthOutcome, DataPlane, DbUser
from lab.sim.flags import FlagReader
from lab.sim.kubeobj import (
    EnvError,
    cpu_millis,
    memory_bytes,
    parse_address,
    probe_port,
    resolve_env,
)


class View:
    """The two reads env resolution and flag reading need, over a dict of objects."""

    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = {(o["kind"], o["metadata"]["name"]): o for o in objs}

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objs.get((kind, name))

    def list(
        self, kind: str, namespace: str | None = None, label_selector: str = ""
    ) -> list[dict[str, Any]]:
        return [o for (k, _), o in self.objs.items() if k == kind]


def test_database_users_and_authorization() -> None:
    plane = DataPlane.from_models([load_app("hotel-reservation").model])
    ns, db = "hotel-reservation", "mongodb-geo"
    assert plane.database_name(ns, db) == "geo-db"
    assert plane.authorize(ns, db, "geo_svc", "geo-pw-14x", "find") == AuthOutcome.OK
    assert plane.authorize(ns, db, "geo_svc", "wrong", "find") == AuthOutcome.AUTH_FAILED
    plane.set_user(ns, db, DbUser(user="reader", password="r", roles=("read",)))
    assert plane.authorize(ns, db, "reader", "r", "find") == AuthOutcome.OK
    assert plane.authorize(ns, db, "reader", "r", "insert") == AuthOutcome.UNAUTHORIZED
    plane.remove_user(ns, db, "reader")
    assert "reader" not in plane.users(ns, db)
    assert plane.authorize(ns, "mongodb-nope", "a", "b", "find") == AuthOutcome.AUTH_FAILED
    with pytest.raises(KeyError):
        plane.revoke_roles(ns, db, "nobody")
    with pytest.raises(KeyError):
        plane.set_user(ns, "mongodb-nope", DbUser(user="a", password="b", roles=()))


def test_network_conditions_validate_and_expire() -> None:
    plane = DataPlane()
    with pytest.raises(ValueError, match="loss"):
        plane.set_network("ns", "svc", loss=1.5)
    with pytest.raises(ValueError, match="delay"):
        plane.set_network("ns", "svc", delay_ms=-1)
    plane.set_network("ns", "svc", delay_ms=10, until=LAB_EPOCH + timedelta(seconds=5))
    assert plane.network("ns", "svc", LAB_EPOCH) is not None
    assert plane.network("ns", "svc", LAB_EPOCH + timedelta(seconds=5)) is None
    plane.set_network("ns", "svc", loss=0.2)
    plane.clear_network("ns", "svc")
    assert plane.network("ns", "svc", LAB_EPOCH) is None


def _flag_cm(text: str, rv: str) -> dict[str, Any]:
    return {
        "kind": "ConfigMap",
        "metadata": {"name": "flagd-config", "resourceVersion": rv},
        "data": {"demo.flagd.json": text},
    }


def test_flag_reader_keeps_the_last_good_config_and_reads_states() -> None:
    model = load_app("online-shop").model
    assert model.flags is not None
    reader = FlagReader(model.flags, "online-shop")
    flags = {
        "cartFailure": {
            "state": "ENABLED",
            "variants": {"on": True, "off": False},
            "defaultVariant": "on",
        },
        "adFailure": {
            "state": "DISABLED",
            "variants": {"on": True, "off": False},
            "defaultVariant": "on",
        },
        "paymentFailure": {"state": "ENABLED", "variants": {"x": 0.25}, "defaultVariant": "x"},
    }
    reader.refresh(View(_flag_cm(json.dumps({"flags": flags}), "1")))
    assert [e.service for e, _ in reader.active("cart")] == ["cart"]
    assert reader.active("ad") == []
    assert reader.active("payment")[0][1] == 0.25
    reader.refresh(View(_flag_cm("{not json", "2")))
    assert reader.last_error is not None and "error parsing flag configuration" in reader.last_error
    assert reader.value("cartFailure") is True  # the last good configuration still serves
    reader.refresh(View())
    assert reader.last_error == 'configmap "flagd-config" not found'
    assert reader.active("cart") == []


def _pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "x"}},
        "spec": {"nodeName": "node-1"},
        "status": {"podIP": "10.244.0.5"},
    }


def test_env_resolution_like_the_kubelet() -> None:
    view = View(
        {"kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"A": "1", "B": "2"}},
        {
            "kind": "Secret",
            "metadata": {"name": "sec"},
            "data": {"PW": base64.b64encode(b"s3cret").decode()},
        },
    )
    container = {
        "envFrom": [
            {"configMapRef": {"name": "cfg"}, "prefix": "CFG_"},
            {"secretRef": {"name": "sec"}},
        ],
        "env": [
            {"name": "HOST", "value": "db"},
            {"name": "URL", "value": "mongodb://$(HOST):27017"},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {
                "name": "OPT",
                "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k", "optional": True}},
            },
        ],
    }
    env = resolve_env(_pod(), container, view)
    assert env["CFG_A"] == "1" and env["PW"] == "s3cret"
    assert env["URL"] == "mongodb://db:27017"
    assert env["IP"] == "10.244.0.5" and env["APP"] == "x"
    assert "OPT" not in env
    with pytest.raises(EnvError, match='configmap "gone" not found'):
        resolve_env(_pod(), {"envFrom": [{"configMapRef": {"name": "gone"}}]}, view)
    with pytest.raises(EnvError, match="couldn't find key X in Secret ns/sec"):
        resolve_env(
            _pod(),
            {"env": [{"name": "Y", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "X"}}}]},
            view,
        )


def test_quantities_probes_and_addresses() -> None:
    assert cpu_millis("500m") == 500 and cpu_millis("2") == 2000 and cpu_millis("0.1") == 100
    assert memory_bytes("256Mi") == 256 * 2**20 and memory_bytes("1G") == 10**9
    assert memory_bytes("1e3") == 1000 and memory_bytes("12Q") is None and cpu_millis("abc") is None
    container = {"ports": [{"name": "grpc", "containerPort": 8083}]}
    assert probe_port(container, {"tcpSocket": {"port": "grpc"}}) == 8083
    assert probe_port(container, {"httpGet": {"port": "8080"}}) == 8080
    assert probe_port(container, {"grpc": {"port": "admin"}}) == 0
    assert probe_port(container, {"exec": {"command": ["true"]}}) is None
    assert parse_address("http://quote:8090/x") == ("quote", None, 8090)
    assert parse_address("mongodb-geo.hotel.svc.cluster.local:27017") == (
        "mongodb-geo",
        "hotel",
        27017,
    )
    assert parse_address("flagd") == ("flagd", None, None)


def test_retries_recover_transport_failures_only() -> None:
    from lab.sim.outcome import Failure, Result
    from lab.sim.traffic import _retry

    result = Result(
        ok=0.4,
        ok_latency_ms=10.0,
        failures=[
            Failure(p=0.5, latency_ms=1.0, code=503, message="refused"),
            Failure(p=0.1, latency_ms=5.0, code=500, message="boom"),
        ],
    )
    _retry(result, 1)
    refused, boom = result.failures
    assert refused.p == pytest.approx(0.5 * 0.5)  # both attempts must fail
    assert boom.p == pytest.approx(0.1)  # an application error is not retried
    assert result.ok == pytest.approx(1.0 - 0.25 - 0.1)
    assert result.ok_latency_ms > 10.0  # a recovered request paid for its first attempt
