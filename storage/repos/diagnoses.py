"""Diagnoses: one row per reasoner verdict, the whole diagnosis kept as JSON in `body`."""

from __future__ import annotations

from sqlmodel import col, select

from storage.errors import NotFound
from storage.repos.base import Repository, fresh
from storage.tables import DiagnosisRow


class DiagnosisRepository(Repository):
    def add(self, diagnosis: DiagnosisRow) -> DiagnosisRow:
        row = fresh(diagnosis)
        with self._db.write() as s:
            s.add(row)
        return row

    def get(self, diagnosis_id: int) -> DiagnosisRow:
        with self._db.read() as s:
            row = s.get(DiagnosisRow, diagnosis_id)
        if row is None:
            raise NotFound(f"diagnosis {diagnosis_id}")
        return row

    def list_for_incident(self, incident_id: str) -> list[DiagnosisRow]:
        """Oldest first."""
        query = (
            select(DiagnosisRow)
            .where(col(DiagnosisRow.incident_id) == incident_id)
            .order_by(col(DiagnosisRow.created_at), col(DiagnosisRow.id))
        )
        with self._db.read() as s:
            return list(s.exec(query))

    def latest(self, incident_id: str) -> DiagnosisRow | None:
        query = (
            select(DiagnosisRow)
            .where(col(DiagnosisRow.incident_id) == incident_id)
            .order_by(col(DiagnosisRow.created_at).desc(), col(DiagnosisRow.id).desc())
            .limit(1)
        )
        with self._db.read() as s:
            return s.exec(query).first()
