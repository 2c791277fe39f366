"""Where model weights come from: Hugging Face on every start, or the stack's S3 bucket. Pure.

With `s3`, a populate Job copies each model's pinned revision into the stack-owned bucket once,
at `models/<huggingFaceId>/<revision>/`, and every replica streams it from there with vLLM's
Run:ai Model Streamer (docs/upstream-facts.md#s3-weights): no Hugging Face download per start, no rate limit,
and the gated-model token is only needed by the Job.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from config.sections.base import ConfigModel

WeightsSource = Literal["s3", "huggingface"]

OBJECT_ROOT = "models"
STREAMER_LOAD_FORMATS = ("runai_streamer", "runai_streamer_sharded")
"""The only load formats vLLM accepts for an object-store model path (docs/upstream-facts.md#s3-weights, item 1)."""
# The streamer's CPU staging buffer (RUNAI_STREAMER_MEMORY_LIMIT) defaults to 40 GB, more than a
# replica's memory limit: the platform gives it this share of the container's memory, per rank.
STREAMER_MEMORY_SHARE = 0.25
STREAMER_GB_PER_READ = 4
"""AWS's fast-model-loading guide: concurrency = ceil(checkpoint GB / 4) (4 GiB chunks)."""
STREAMER_CONCURRENCY_MIN = 8
"""The streamer's own default for object stores (docs/upstream-facts.md#s3-weights, item 6)."""
STREAMER_CONCURRENCY_MAX = 64


class ModelWeights(ConfigModel):
    """Where one model's weights come from."""

    source: WeightsSource | None = Field(
        default=None,
        description="`s3`: copied once into the stack's weights bucket by a populate Job, then streamed by every replica "
        "(Run:ai Model Streamer); `huggingface`: downloaded from Hugging Face by every replica. Unset: s3 in prod, "
        "huggingface elsewhere.",
    )


class WeightsConfig(ConfigModel):
    """The stack's weights bucket (created when a model streams from S3)."""

    retired_revision_days: int = Field(
        default=7,
        ge=1,
        le=365,
        description="Days the objects of a revision no model uses any more stay in the bucket (a rollback within them "
        "skips the download); the next populate Job after that deletes them.",
    )


def default_source(is_prod: bool) -> WeightsSource:
    return "s3" if is_prod else "huggingface"


def repository_prefix(hugging_face_id: str) -> str:
    """Every revision of one Hugging Face repository."""
    return f"{OBJECT_ROOT}/{hugging_face_id}/"


def revision_prefix(hugging_face_id: str, revision: str) -> str:
    """One pinned revision: the model path vLLM streams (no trailing slash)."""
    return f"{repository_prefix(hugging_face_id)}{revision}"


def s3_uri(bucket: str, hugging_face_id: str, revision: str) -> str:
    return f"s3://{bucket}/{revision_prefix(hugging_face_id, revision)}"


def streamer_concurrency(checkpoint_gb: float) -> int:
    """Parallel S3 reads per replica: AWS's ceil(GB / 4), never below the streamer's own default."""
    wanted = math.ceil(checkpoint_gb / STREAMER_GB_PER_READ)
    return max(STREAMER_CONCURRENCY_MIN, min(STREAMER_CONCURRENCY_MAX, wanted))


def streamer_memory_limit(memory_bytes: float, tensor_parallel_size: int) -> int:
    """The staging buffer per rank, in bytes: a share of the container's memory, split over its ranks."""
    return int(memory_bytes * STREAMER_MEMORY_SHARE / tensor_parallel_size)
