"""`ConventionView`: the simulator's history as a Prometheus scraping the lab's exporter in
another metric convention would hold it.

The exporter (`lab.sim.exporter`) renames each lab request series with
`lab.sim.conventions.convert`, scaling some (a `_sum` in milliseconds) and summing those that
fold into one (an OTel service-graph edge has no namespace or status code). This view does the
same to the stored history, read-only and lazily: each converted series is mapped to the lab
series it comes from, each with its scale, and its samples are the scaled sum of theirs at each
scrape. So `SimMetrics` evaluating a signal profile's PromQL over the view reads the numbers a
real Prometheus would give for that convention, without a second store. Series that are not
request metrics (kube-state-metrics, cAdvisor) are the same under every convention and pass
through unchanged.
"""

from __future__ import annotations

from collections import defaultdict

from lab.sim.conventions import CONVENTIONS, convert, is_request_metric
from lab.sim.metrics import MetricStore, SeriesKey

#: One source of a converted series: the lab series and the factor its values are scaled by.
Source = tuple[SeriesKey, float]


class ConventionView:
    """Implements `lab.sim.promql.History` over a `MetricStore`, in `convention`'s names."""

    def __init__(self, store: MetricStore, convention: str) -> None:
        if convention not in CONVENTIONS:
            raise ValueError(
                f"unknown convention {convention!r}; use one of {', '.join(CONVENTIONS)}"
            )
        self.store = store
        self.convention = convention
        self.scrape_interval_s = store.scrape_interval_s
        self._generation = -1
        self._sources: dict[SeriesKey, list[Source]] = {}
        self._by_name: dict[str, list[SeriesKey]] = {}

    def _mapping(self) -> tuple[dict[SeriesKey, list[Source]], dict[str, list[SeriesKey]]]:
        """The converted keys and their sources, mapped again only when the store's set of
        series changed since the last call (a new service, a pod's series gone)."""
        with self.store.lock:
            if self._generation == self.store.generation:
                return self._sources, self._by_name
            sources: dict[SeriesKey, list[Source]] = defaultdict(list)
            for key in self.store.all_keys():
                name, labelset = key
                if not is_request_metric(name):
                    sources[key].append((key, 1.0))
                    continue
                # Converting 1.0 gives each output series' scale.
                for _family, _kind, _help, series, converted, scale in convert(
                    self.convention, name, labelset, 1.0
                ):
                    sources[(series, converted)].append((key, scale))
            by_name: dict[str, list[SeriesKey]] = defaultdict(list)
            for converted_key in sources:
                by_name[converted_key[0]].append(converted_key)
            self._sources, self._by_name = dict(sources), dict(by_name)
            self._generation = self.store.generation
            return self._sources, self._by_name

    @property
    def generation(self) -> int:
        return self.store.generation

    def names(self) -> set[str]:
        return set(self._mapping()[1])

    def keys(self, name: str) -> list[SeriesKey]:
        return list(self._mapping()[1].get(name, ()))

    def samples(self, key: SeriesKey, t0: float, t1: float) -> list[tuple[float, float]]:
        """The scaled sum of the sources' points at each scrape where any is present, as the
        exporter sums the live values it folds into one series."""
        sources = self._mapping()[0].get(key, ())
        if len(sources) == 1:
            [(source, scale)] = sources
            points = self.store.samples(source, t0, t1)
            return points if scale == 1.0 else [(t, v * scale) for t, v in points]
        summed: dict[float, float] = defaultdict(float)
        for source, scale in sources:
            for t, v in self.store.samples(source, t0, t1):
                summed[t] += v * scale
        return sorted(summed.items())

    def latest(self, key: SeriesKey, t: float, lookback_s: float) -> float | None:
        values = [
            (value, scale)
            for source, scale in self._mapping()[0].get(key, ())
            if (value := self.store.latest(source, t, lookback_s)) is not None
        ]
        if not values:
            return None
        return sum(v * scale for v, scale in values)
