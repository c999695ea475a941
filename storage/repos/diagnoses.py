"""Diagnoses: one row per reasoner verdict, the whole diagnosis kept as JSON in `body`."""

from __future__ import annotations

from sqlmodel import col, select

from storage.errors import NotFound
from storage.records import StoredDiagnosis
from storage.repos.base import Repository, record_of, records_of, row_of
from storage.tables import DiagnosisRow


class DiagnosisRepository(Repository):
    def add(self, diagnosis: StoredDiagnosis) -> StoredDiagnosis:
        row = row_of(diagnosis, DiagnosisRow)
        with self._db.write() as s:
            s.add(row)
            s.flush()
            return record_of(row, StoredDiagnosis)

    def get(self, diagnosis_id: int) -> StoredDiagnosis:
        with self._db.read() as s:
            row = s.get(DiagnosisRow, diagnosis_id)
        if row is None:
            raise NotFound(f"diagnosis {diagnosis_id}")
        return record_of(row, StoredDiagnosis)

    def list_for_incident(self, incident_id: str) -> list[StoredDiagnosis]:
        """Oldest first."""
        query = (
            select(DiagnosisRow)
            .where(col(DiagnosisRow.incident_id) == incident_id)
            .order_by(col(DiagnosisRow.created_at), col(DiagnosisRow.id))
        )
        with self._db.read() as s:
            return records_of(s.exec(query), StoredDiagnosis)

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
