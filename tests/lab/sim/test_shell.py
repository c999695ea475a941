"""The busybox gates init containers run: their result follows from the cluster's Services and
the image's files, with busybox's own words."""

from __future__ import annotations

from lab.sim.images import ImageSpec
from lab.sim.shell import run_tool

BUSYBOX = ImageSpec(
    binaries=frozenset({"/bin/sh", "/bin/nc", "/bin/nslookup"}), path=("/bin",), entrypoint=("sh",)
)
SERVICES = {("hotel", "mongodb-user"): {27017}}


def _run(*argv: str, spec: ImageSpec = BUSYBOX) -> tuple[int, tuple[str, ...]]:
    run = run_tool(
        list(argv),
        spec,
        namespace="hotel",
        resolves=lambda svc, ns: (ns or "hotel", svc) in SERVICES,
        answers=lambda svc, ns, port: port in SERVICES.get((ns or "hotel", svc), set()),
    )
    return run.exit_code, run.output


def test_nc_gate_on_a_service_that_exists_passes() -> None:
    assert _run("/bin/sh", "-c", "nc -z -w 2 mongodb-user 27017") == (0, ())
    assert _run("/bin/sh", "-c", "nc -z mongodb-user.hotel.svc.cluster.local 27017")[0] == 0


def test_nc_gate_on_a_host_that_does_not_resolve_fails_like_busybox() -> None:
    code, out = _run("/bin/sh", "-c", "nc -z -w 2 mongodb-user.hotel-staging 27017")
    assert (code, out) == (1, ("nc: bad address 'mongodb-user.hotel-staging'",))
    # A port the Service does not declare: silent, exit 1.
    assert _run("/bin/sh", "-c", "nc -z mongodb-user 27018") == (1, ())


def test_nslookup_and_scripts_stop_at_the_first_failure() -> None:
    code, out = _run("/bin/sh", "-c", "echo checking && nslookup mongodb-usr && echo done")
    assert code == 1
    assert out[0] == "checking"
    assert "** server can't find mongodb-usr.hotel.svc.cluster.local: NXDOMAIN" in out
    assert "done" not in out
    assert _run("/bin/sh", "-c", "exit 3")[0] == 3


def test_a_command_the_image_lacks_is_not_found_and_unknown_tools_succeed() -> None:
    assert _run("/bin/sh", "-c", "curl -f http://mongodb-user") == (
        127,
        ("sh: curl: not found",),
    )
    with_tool = ImageSpec(binaries=BUSYBOX.binaries | {"/bin/migrate"}, path=("/bin",))
    assert _run("/bin/sh", "-c", "migrate up", spec=with_tool) == (0, ())
