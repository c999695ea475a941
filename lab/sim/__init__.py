"""The workload simulator: the lab's apps as running programs, derived from cluster state.

Public API (see each module):

* `lab.sim.world.LabWorld(WorldConfig(...))` — clock + emulated cluster + apps + telemetry
  in one object; `start`, `advance`, `wait_healthy`, `snapshot`, `api`, `dataplane`,
  `metrics`, `api_url`, `metrics_url`, `kubeconfig_path`.
* `lab.sim.simulator.Simulator(models=..., seed=...)` — `attach(view, version=)`,
  `tick(now)`, `snapshot(namespace) -> AppSnapshot`, `runtime` (the `PodRuntime`),
  `dataplane`, `registry`, `store`, `on_scrape(callback)`.
* `lab.sim.runtime.SimRuntime` — implements `lab.kube.runtime.PodRuntime`.
* `lab.sim.dataplane.DataPlane` — database users and network conditions.
* `lab.sim.source.SimMetrics` — implements `agents.ports.MetricsSource` in-process.
* `lab.sim.exporter.MetricsExporter` — `/metrics` for a real Prometheus.
* `lab.sim.promql` — the PromQL subset; `lab.sim.metrics` — metric names and history.

The principle (DESIGN section 9): symptoms derive from the cluster's actual objects through
the behaviour model, never from a fault's name.
"""
