"""Scheduled health digests for team channels: computed from storage, rendered as Block Kit,
posted with a chart (DESIGN section 7).

    scheduler.start(paused=True)
    register_digests(services)        # one job per STRATUS_DIGEST_SCHEDULES entry
    scheduler.resume()
"""

from bot.digest.content import Digest, NamespaceDigest, compute_digest
from bot.digest.post import DigestPoster, PostedDigest, resolve_channel
from bot.digest.render import digest_figures, digest_text, render_digest
from bot.digest.schedule import (
    JOB_PREFIX,
    job_id,
    register_digests,
    run_digest_job,
    schedule_digests,
)

__all__ = [
    "JOB_PREFIX",
    "Digest",
    "DigestPoster",
    "NamespaceDigest",
    "PostedDigest",
    "compute_digest",
    "digest_figures",
    "digest_text",
    "job_id",
    "register_digests",
    "render_digest",
    "resolve_channel",
    "run_digest_job",
    "schedule_digests",
]
