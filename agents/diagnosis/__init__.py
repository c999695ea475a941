"""Diagnosis (DESIGN section 6, RCACopilot): evidence handlers, a token budget, and two
reasoners behind one facade, `Diagnoser.diagnose(incident, alerts) -> Diagnosis`."""

from agents.diagnosis.budget import estimate_tokens
from agents.diagnosis.claude import ClaudeSettings
from agents.diagnosis.diagnoser import Diagnoser
from agents.diagnosis.handlers import Handler, HandlerError, HandlerSet, load_handlers
from agents.diagnosis.llm import LanguageModel
from agents.diagnosis.ports import JournalView, Redactor, SimilarSearch
from agents.diagnosis.suspect import Suspect, suspects_of
from agents.redact import redact_text as basic_redact

__all__ = [
    "ClaudeSettings",
    "Diagnoser",
    "Handler",
    "HandlerError",
    "HandlerSet",
    "JournalView",
    "LanguageModel",
    "Redactor",
    "SimilarSearch",
    "Suspect",
    "basic_redact",
    "estimate_tokens",
    "load_handlers",
    "suspects_of",
]
