"""`stratus lab`: run the built-in lab and break it on purpose.

    stratus lab up [--app NAME ...] [--port N] [--kubeconfig PATH] [--speed X] [--metrics-port N]
    stratus lab faults
    stratus lab inject FAULT [--target SERVICE] [--app APP] [--param k=v ...]

`lab up` runs in the foreground until Ctrl-C (SIGINT) or SIGTERM. Next to the kubeconfig it
writes `<kubeconfig>.lab.json` with the URLs of the API, the metrics exporter and the
loopback-only control endpoint; `lab inject` reads it to find the running lab (pass the same
`--kubeconfig` to both). Errors are one line on stderr: exit 1 when something is not running
or refused the change, 2 for a bad command line, fault, app, target or parameter.

The lab is imported inside the commands, so that `stratus --help` does not load it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, NoReturn

import click

from bot.cli.common import StopSignals

DEFAULT_KUBECONFIG = Path(".stratus-lab") / "kubeconfig"
EXIT_FAILED = 1
EXIT_USAGE = 2

_kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_KUBECONFIG,
    show_default=True,
    help="Where `lab up` writes the kubeconfig (its state file goes next to it).",
)


def state_file(kubeconfig: Path) -> Path:
    return kubeconfig.with_name(kubeconfig.name + ".lab.json")


def _fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    click.echo(f"stratus: {message}", err=True)
    sys.exit(code)


@click.group("lab")
def lab() -> None:
    """The built-in lab: an emulated cluster running two apps, and a fault library."""


# ---------------------------------------------------------------------------------- up


@lab.command("up")
@click.option(
    "--app",
    "apps",
    multiple=True,
    callback=lambda _ctx, _param, values: tuple(_app(v) for v in values),
    help="An app to deploy (repeat for several; default: all).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="API port (0: any free).")
@_kubeconfig_option
@click.option(
    "--speed",
    type=click.FloatRange(min=0.01, max=1000),
    default=1.0,
    show_default=True,
    help="Lab seconds per wall second.",
)
@click.option(
    "--metrics-port", type=click.IntRange(0, 65535), default=0, help="/metrics port (0: any)."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Simulation seed.")
@click.option(
    "--signals",
    # The same names as STRATUS_SIGNAL_PROFILE's built-in profiles (a test compares them).
    type=click.Choice(["lab", "otel", "istio", "linkerd", "micrometer", "ingress-nginx"]),
    default="lab",
    show_default=True,
    help="Metric convention /metrics speaks (what a real cluster's mesh or library exports).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log what the lab does (INFO).")
def up(
    *,
    apps: tuple[str, ...],
    port: int,
    kubeconfig: Path,
    speed: float,
    metrics_port: int,
    seed: int,
    signals: str,
    verbose: bool,
) -> None:
    """Run the lab in the foreground until Ctrl-C."""
    from lab.apps import APPS
    from lab.faults.server import ControlServer, FaultControl
    from lab.sim.exporter import MetricsExporter
    from lab.sim.world import LabWorld, WorldConfig

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    stop = StopSignals()
    stop.install()

    world = LabWorld(
        WorldConfig(apps=apps or APPS, seed=seed, stepped=False, speed=speed, signals=signals)
    )
    exporter: MetricsExporter | None = None
    control: ControlServer | None = None
    state = state_file(kubeconfig)
    try:
        world.start()
        try:
            api_url = world.cluster.serve(port)
            exporter = MetricsExporter(world.sim.store, port=metrics_port, signals=signals)
            metrics_url = exporter.start() + "/metrics"
            control = ControlServer(FaultControl(world))
            control_url = control.start()
        except (OSError, RuntimeError) as e:  # the API server wraps its bind error
            cause = e.__cause__ if isinstance(e.__cause__, OSError) else e
            _fail(f"cannot listen: {getattr(cause, 'strerror', None) or cause}")
        kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        world.cluster.write_kubeconfig(kubeconfig)
        _write_state(
            state,
            {
                "api_url": api_url,
                "kubeconfig": str(kubeconfig.resolve()),
                "metrics_url": metrics_url,
                "control_url": control_url,
                "apps": list(world.namespaces),
                "pid": os.getpid(),
            },
        )
        click.echo(f"API:        {api_url}")
        click.echo(f"kubeconfig: {kubeconfig}")
        click.echo(f"metrics:    {metrics_url} ({signals} names)")
        click.echo(f"control:    {control_url}")
        click.echo(f"apps:       {', '.join(world.namespaces)} (speed {speed:g}×)")
        click.echo(f"try:        kubectl --kubeconfig {kubeconfig} get pods -A")
        click.echo("Ctrl-C to stop.")
        stop.wait()
        if stop.signum is not None:
            click.echo(f"stopping the lab ({signal.Signals(stop.signum).name})", err=True)
    finally:
        state.unlink(missing_ok=True)
        if control is not None:
            control.stop()
        if exporter is not None:
            exporter.stop()
        world.stop()
        stop.restore()
    click.echo("lab stopped", err=True)


def _write_state(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    partial.replace(path)


# ------------------------------------------------------------------------------ faults


@lab.command("faults")
def list_faults() -> None:
    """List the faults one can inject, one per line."""
    from lab.faults import faults

    library = faults()
    width = max(len(f.id) for f in library)
    for f in library:
        click.echo(f"{f.id:<{width}}  {f.description}")


# ------------------------------------------------------------------------------ inject


def _app(name: str) -> str:
    from lab.apps import APPS

    if name not in APPS:
        raise click.BadParameter(f"unknown app {name!r}; apps: {', '.join(APPS)}")
    return name


def _params(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    del ctx, param
    out: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}")
        out[name] = value
    return out


@lab.command("inject")
@click.argument("fault_id", metavar="FAULT")
@click.option("--target", help="The service to break (default: the fault's own per app).")
@click.option(
    "--app",
    callback=lambda _ctx, _param, value: None if value is None else _app(value),
    help="The app (default: the target's).",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    callback=_params,
    metavar="NAME=VALUE",
    help="A fault parameter (repeatable); `stratus lab faults` lists the faults.",
)
@_kubeconfig_option
def inject(
    fault_id: str,
    target: str | None,
    app: str | None,
    params: dict[str, str],
    kubeconfig: Path,
) -> None:
    """Inject FAULT into the lab that `stratus lab up` runs."""
    state = state_file(kubeconfig)
    try:
        control_url = json.loads(state.read_text(encoding="utf-8"))["control_url"]
    except FileNotFoundError:
        _fail(f"no running lab found ({state} does not exist); start one with `stratus lab up`")
    except (ValueError, KeyError, TypeError) as e:
        _fail(f"{state} is not a lab state file: {e}")
    if not str(control_url).startswith("http://"):
        _fail(f"{state}: the control URL {control_url!r} is not an http URL")
    body = {"app": app, "target": target, "params": params}
    request = urllib.request.Request(  # noqa: S310 - an http URL, checked above
        f"{control_url}/lab/faults/{fault_id}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            answer = json.loads(response.read())
    except urllib.error.HTTPError as e:
        message = _error_message(e)
        _fail(message, EXIT_USAGE if e.code in (400, 404) else EXIT_FAILED)
    except (urllib.error.URLError, OSError) as e:
        _fail(f"the lab at {control_url} is not answering ({e}); is `stratus lab up` running?")
    injection = answer["injection"]
    truth = injection["truth"]
    click.echo(
        f"injected {injection['fault']} into {injection['namespace']}/{injection['target']}"
        + (f" (until {injection['expires_at']})" if injection["expires_at"] else "")
    )
    for line in injection["changes"]:
        click.echo(f"  {line}")
    causes = ", ".join(truth["root_causes"]) or "none"
    click.echo(f"ground truth: {causes}; {truth['category'] or 'no fault'}")


def _error_message(error: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(error.read())["error"])
    except (ValueError, KeyError, TypeError):
        return f"the lab answered {error.code} {error.reason}"


if __name__ == "__main__":  # pragma: no cover - `python -m bot.cli.lab_commands`
    lab(prog_name="stratus lab")
