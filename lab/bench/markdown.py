"""The Markdown report: the comparison table, every scenario's outcome per agent, what failed and
why, and the published reference points of other suites (labelled as such)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lab.bench.results import AgentSummary, BenchReport, RunResult

#: Published figures of other suites. Different problems, apps, agents and success criteria:
#: context for a reader, never a head-to-head comparison.
REFERENCES: tuple[tuple[str, str, str], ...] = (
    (
        "AIOpsLab (2025), its best agent",
        "54.55 %",
        "its own problems, apps and oracle; LLM agents",
    ),
    (
        "ITBench (2025), its GPT-4o SRE agent",
        "11.43 %",
        "its own SRE scenarios and success criteria",
    ),
)


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def _secs(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f} s"


def _mark(flag: bool | None) -> str:
    return "–" if flag is None else ("✓" if flag else "✗")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


Row = tuple[str, Callable[[AgentSummary], str]]


def summary_table(report: BenchReport) -> list[str]:
    rows: list[Row] = [
        ("Detection accuracy", lambda s: _pct(s.detection_accuracy)),
        ("False-positive incidents", lambda s: str(s.false_positive_incidents)),
        ("Localisation Acc@1", lambda s: _pct(s.localization_acc1)),
        ("Localisation Acc@3", lambda s: _pct(s.localization_acc3)),
        ("Category accuracy", lambda s: _pct(s.category_accuracy)),
        (
            "**Mitigation success** (fault scenarios)",
            lambda s: f"**{_pct(s.mitigation_success_rate)}**",
        ),
        ("– undoable faults healed", lambda s: _pct(s.mitigated_rate_undoable)),
        ("– unfixable faults escalated cleanly", lambda s: _pct(s.escalated_rate_unfixable)),
        ("– healed by the first transaction", lambda s: _pct(s.first_plan_success_rate)),
        ("Controls passed (no incident, no write)", lambda s: _pct(s.control_success_rate)),
        ("Median time to detect", lambda s: _secs(s.median_ttd_s)),
        ("Median time to localise", lambda s: _secs(s.median_ttl_s)),
        ("Median time to heal (mitigate)", lambda s: _secs(s.median_ttm_s)),
        ("**TNR violations**", lambda s: f"**{s.tnr_violations}**"),
        ("**Harmful end states**", lambda s: f"**{s.harmful_end_states}**"),
        (
            "**Undoable faults healed without a page**",
            lambda s: f"**{_pct(s.healed_without_page_rate)}**",
        ),
        ("Pages (undoable faults handed to a person)", lambda s: str(s.pages)),
        (
            "**Collateral drift** (fields / runs)",
            lambda s: f"**{s.collateral_drift}** / {s.runs_with_drift}",
        ),
        ("Writes outside the ground truth", lambda s: str(s.writes_outside_truth)),
        ("Plans replaced by the plan noise", lambda s: str(s.noisy_plans)),
        (
            "**Acted when wrong** (writes after a wrong diagnosis)",
            lambda s: f"**{s.acted_when_wrong}**",
        ),
        ("Abstained (incident to a person, no write)", lambda s: str(s.abstained)),
        ("Outages injected (`--chaos`)", lambda s: str(s.outages)),
        (
            "**Commits on an unmeasured window** (`--chaos`)",
            lambda s: f"**{s.unmeasured_commits}**",
        ),
        ("Escalations", lambda s: str(s.escalations)),
        ("Rollbacks", lambda s: str(s.rollbacks)),
        ("Transactions / writes", lambda s: f"{s.attempts} / {s.actions}"),
        ("Writes while the app was healthy", lambda s: str(s.writes_while_healthy)),
        ("Incidents opened", lambda s: str(s.incidents)),
        ("LLM tokens", lambda s: str(s.tokens)),
        ("Largest evidence (tokens)", lambda s: f"{s.max_evidence_tokens:,}"),
        ("Runs crashed", lambda s: str(s.crashed)),
    ]
    names = list(report.agents)
    lines = [
        "| Figure | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for label, value in rows:
        lines.append(f"| {label} | " + " | ".join(value(report.summaries[n]) for n in names) + " |")
    return lines


def _ratio_line(report: BenchReport) -> list[str]:
    if "stratus" not in report.summaries or "naive" not in report.summaries:
        return []
    ours, naive = report.summaries["stratus"], report.summaries["naive"]
    rate = (
        f"{ours.mitigation_success_rate / naive.mitigation_success_rate:.2f}×"
        if naive.mitigation_success_rate > 0
        else "undefined (naive healed none)"
    )
    healed = (
        f"{ours.healed_without_page_rate / naive.healed_without_page_rate:.2f}×"
        if naive.healed_without_page_rate > 0
        else "undefined (naive healed none without a page)"
    )
    return [
        f"Stratus vs naive: undoable faults healed without a page "
        f"{_pct(ours.healed_without_page_rate)} vs {_pct(naive.healed_without_page_rate)} "
        f"(ratio {healed}); collateral drift {ours.collateral_drift} vs "
        f"{naive.collateral_drift} field(s).",
        "",
        f"Stratus vs naive: mitigation success {_pct(ours.mitigation_success_rate)} vs "
        f"{_pct(naive.mitigation_success_rate)} (ratio {rate}); TNR violations "
        f"{ours.tnr_violations} vs {naive.tnr_violations}; harmful end states "
        f"{ours.harmful_end_states} vs {naive.harmful_end_states}.",
        "",
    ]


def scenario_table(report: BenchReport) -> list[str]:
    names = list(report.agents)
    lines = [
        "| Scenario | Expect | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    first = report.results[names[0]]
    for index, row in enumerate(first):
        cells = []
        for name in names:
            r = report.results[name][index]
            cells.append(_cell(f"{_mark(r.mitigated)} {r.outcome}"))
        lines.append(f"| `{row.id}` | {row.expect} | " + " | ".join(cells) + " |")
    return lines


def left_behind(report: BenchReport) -> list[str]:
    """Per agent, every run that paged, drifted, wrote outside the ground truth or had a plan
    replaced by the noise: what it did, in the report's words."""
    lines: list[str] = []
    for name in report.agents:
        runs = [
            r
            for r in report.results[name]
            if r.pages
            or r.collateral_drift
            or r.writes_outside_truth
            or r.plan_noise
            or r.unmeasured_commits
        ]
        lines.append(f"### `{name}`")
        lines.append("")
        if not runs:
            lines += ["Nothing: no page, no drift, no write outside the ground truth.", ""]
            continue
        for r in runs:
            heal = "healed without a page" if r.healed_without_page else _cell(r.outcome)
            lines.append(f"- **{r.id}** ({r.expect}) — {heal}; {r.pages} page(s)")
            for line in r.plan_noise:
                lines.append(f"  - plan noise: {_cell(line)}")
            for line in r.unmeasured_commits:
                outages = _cell("; ".join(r.outages))
                lines.append(f"  - committed unmeasured: {_cell(line)} (outages: {outages})")
            for line in r.collateral_drift[:6]:
                lines.append(f"  - drift: {_cell(line)}")
            if len(r.collateral_drift) > 6:
                lines.append(f"  - drift: … and {len(r.collateral_drift) - 6} more field(s)")
            for line in r.writes_outside_truth[:4]:
                lines.append(f"  - outside the ground truth: {_cell(line)}")
        lines.append("")
    return lines


def _diagnosis(r: RunResult) -> str:
    if r.diagnosed_service is None:
        return "no diagnosis"
    ok = f"Acc@1 {_mark(r.localized_acc1)}, Acc@3 {_mark(r.localized_acc3)}, category " + _mark(
        r.category_correct
    )
    return f"top: {r.diagnosed_service} ({r.diagnosed_category}); {ok}"


def failures(report: BenchReport) -> list[str]:
    lines: list[str] = []
    for name in report.agents:
        failed = [r for r in report.results[name] if not r.mitigated and not r.scenario_error]
        unsafe = [
            r
            for r in report.results[name]
            if r.mitigated and (r.tnr_violations or r.harmful_end_states)
        ]
        lines.append(f"### `{name}`: {len(failed)} failed, {len(unsafe)} passed with violations")
        lines.append("")
        for r in [*failed, *unsafe]:
            lines.append(f"- **{r.id}** — {_cell(r.outcome)}")
            lines.append(f"  - diagnosis: {_diagnosis(r)}")
            if r.plans:
                shown = "; ".join(r.plans[:4])
                more = f" … and {len(r.plans) - 4} more" if len(r.plans) > 4 else ""
                lines.append(f"  - transactions ({len(r.plans)}): " + _cell(shown + more))
            for detail in r.tnr_details[:4]:
                lines.append(f"  - TNR: {_cell(detail)}")
            for detail in r.tnr_fault_course[:4]:
                lines.append(f"  - not counted, the fault's course: {_cell(detail)}")
            for harm in r.harmful_end_states:
                lines.append(f"  - harm: {_cell(harm)}")
            if r.oracle_problems and not r.mitigated:
                lines.append("  - oracle at the end: " + _cell("; ".join(r.oracle_problems[:3])))
        lines.append("")
    return lines


def fault_course(report: BenchReport) -> list[str]:
    """Every μ above μ0 at a boundary that the run without the agent showed to be the fault's
    own course (`lab.bench.counterfactual`): not counted as a violation, never hidden."""
    lines = [
        "Each is μ above μ0 at a transaction's boundary that is not counted as a TNR violation: "
        "every earlier transaction of the run left nothing in place, and the same scenario with "
        "the same seed and no agent measured as much μ at the same lab second.",
        "",
    ]
    found = False
    for name in report.agents:
        for r in report.results[name]:
            for detail in r.tnr_fault_course:
                found = True
                lines.append(f"- `{name}` **{r.id}**: {_cell(detail)}")
    if not found:
        lines.append("None in this run.")
    lines.append("")
    return lines


def evidence(report: BenchReport) -> list[str]:
    """The largest evidence each scenario handed the reasoner, against the budget."""
    budget = report.evidence_token_budget
    names = list(report.agents)
    lines = [
        f"Budget: {budget:,} estimated tokens per diagnosis. Largest evidence of any diagnosis "
        "in the run:",
        "",
        "| Scenario | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for index, row in enumerate(report.results[names[0]]):
        cells = []
        for name in names:
            tokens = report.results[name][index].evidence_tokens
            over = " **over budget**" if tokens > budget else ""
            cells.append(f"{tokens:,} ({100 * tokens / budget:.0f} %){over}" if tokens else "–")
        lines.append(f"| `{row.id}` | " + " | ".join(cells) + " |")
    return lines


def render_markdown(report: BenchReport, *, title: str = "Stratus bench") -> str:
    names = ", ".join(f"`{n}`" for n in report.agents)
    descriptions = [
        f"- `{s.agent}`: {s.description}" for s in _ordered(report.summaries, report.agents)
    ]
    scenarios = len(next(iter(report.results.values()), ()))
    lines = [
        f"# {title}",
        "",
        f"Suite `{report.suite}`: {scenarios} scenarios; agents {names}; seed {report.seed}; "
        f"reasoner {report.reasoner}; signal profile `{report.signals}`; wall time "
        f"{report.wall_s:.0f} s; plan noise {report.settings.get('plan_noise', 0.0):g}"
        f"{'; chaos (outages at seeded moments)' if report.settings.get('chaos') else ''}. Lab "
        "times are lab seconds from the first fault. How each figure is scored: "
        "`lab/scenarios/README.md`.",
        "",
        *descriptions,
        "",
        "## Summary",
        "",
        *summary_table(report),
        "",
        *_ratio_line(report),
        "Published reference points of **other suites** (different problems, apps and success "
        "criteria — context, not comparable head to head):",
        "",
        "| Suite and agent | Mitigation | Note |",
        "|---|---:|---|",
        *(f"| {who} | {rate} | {note} |" for who, rate, note in REFERENCES),
        "",
        "## Scenarios",
        "",
        *scenario_table(report),
        "",
        "## Failures and violations",
        "",
        *failures(report),
        "## μ above μ0 that the run without the agent explains",
        "",
        *fault_course(report),
        "## Pages, collateral drift, writes outside the ground truth, plan noise",
        "",
        *left_behind(report),
        "## Evidence size",
        "",
        *evidence(report),
        "",
    ]
    if report.scenario_errors:
        lines += ["## Scenario errors", "", *(f"- {_cell(e)}" for e in report.scenario_errors), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _ordered(summaries: dict[str, AgentSummary], names: Sequence[str]) -> list[AgentSummary]:
    return [summaries[n] for n in names]
