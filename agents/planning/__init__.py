"""Mitigation planning: from a diagnosis to ranked plans of typed actions, with reflection on
earlier attempts (STRATUS), or an escalation with a runbook when nothing undoable can help."""

from agents.planning.plan import Attempt, CandidatePlan, Escalation, Plan, Planner, Proposal
from agents.planning.planner import RulePlanner

__all__ = ["Attempt", "CandidatePlan", "Escalation", "Plan", "Planner", "Proposal", "RulePlanner"]
