"""Diagnoses: one row per reasoner verdict, the whole diagnosis kept as JSON in `body`."""

from __future__ import annotations

from sqlmodel import col, select

from storage.records import StoredDiagnosis
from storage.repos.base import Repository, record_of
from storage.tables import DiagnosisRow


class DiagnosisRepository(Repository):
    def add(self, diagnosis: StoredDiagnosis) -> StoredDiagnosis:
        return self._add(diagnosis, DiagnosisRow)

    def get(self, diagnosis_id: int) -> StoredDiagnosis:
        return self._fetch(DiagnosisRow, diagnosis_id, StoredDiagnosis, f"diagnosis {diagnosis_id}")

    def list_for_incident(self, incident_id: str) -> list[StoredDiagnosis]:
        """Oldest first."""
        query = (
            select(DiagnosisRow)
            .where(col(DiagnosisRow.incident_id) == incident_id)
            .order_by(col(DiagnosisRow.created_at), col(DiagnosisRow.id))
        )
        return self._all(query, StoredDiagnosis)

    def latest(self, incident_id: str) -> StoredDiagnosis | None:
        query = (
            select(DiagnosisRow)
            .where(col(DiagnosisRow.incident_id) == incident_id)
            .order_by(col(DiagnosisRow.created_at).desc(), col(DiagnosisRow.id).desc())
            .limit(1)
        )
        with self._db.read() as s:
            row = s.exec(query).first()
            return None if row is None else record_of(row, StoredDiagnosis)
