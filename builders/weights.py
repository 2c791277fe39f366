"""The weights bucket's policies and lifecycle, and the IAM of who reads and writes it. Pure.

Readers (a model's replicas) may list and get every revision of their own repository's prefix
(`models/<huggingFaceId>/`), read-only: a revision change updates the read policy at once, while
the Deployment keeps running the old revision until the new revision's populate Job has finished,
and the old revision's new pods (a scale-up, a spot replacement) must still read it. The populate
Job of a model may write its own revision's prefix, and tag, untag and delete objects of its own
repository's other revisions (it deletes only those retired `weights.retiredRevisionDays` ago;
see weights_script.py).
"""

from __future__ import annotations

from typing import Any

from builders.iam import PolicyDocument, policy_document
from builders.serving import weights_script
from config.sections.weights import repository_prefix, revision_prefix

INCOMPLETE_UPLOAD_DAYS = 1


def bucket_policy(bucket_arn: str) -> PolicyDocument:
    """TLS only: any request over plain HTTP is denied, whoever makes it."""
    return policy_document(
        {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [bucket_arn, f"{bucket_arn}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    )


def lifecycle_rules() -> list[dict[str, Any]]:
    """Lifecycle rules as pulumi-aws BucketLifecycleConfiguration takes them (snake_case keys): the
    parts of uploads a failed Job left. (Retired revisions are deleted by the populate Job: an
    expiration rule would count from each object's upload, not from its retirement.)"""
    return [
        {
            "id": "abort-incomplete-uploads",
            "status": "Enabled",
            "filter": {"prefix": ""},
            "abort_incomplete_multipart_upload": {"days_after_initiation": INCOMPLETE_UPLOAD_DAYS},
        },
    ]


def _list_repository(sid: str, bucket_arn: str, repository: str) -> dict[str, Any]:
    """Listing the bucket under the repository's prefix (every revision of it)."""
    return {
        "Sid": sid,
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": bucket_arn,
        "Condition": {"StringLike": {"s3:prefix": f"{repository}*"}},
    }


def reader_policy(bucket_arn: str, hugging_face_id: str, revision: str) -> PolicyDocument:
    """A model's replicas: list and read every revision of their own repository, write nothing
    (docs/upstream-facts.md#s3-weights, item 7). Not one revision: `pulumi up` updates this policy
    as soon as `models[].revision` changes, but the Deployment rolls to the new revision only after
    its populate Job (minutes for 8B, most of an hour for 70B), and every new pod of the old
    revision in between must still list and read it. The revision is unused; the signature is the
    populate policy's. Two models of one repository (other revisions, other namespaces) may read
    each other's copies of that checkpoint, nothing of another repository."""
    repository = repository_prefix(hugging_face_id)
    return policy_document(
        _list_repository("ListOwnRepository", bucket_arn, repository),
        {"Sid": "ReadOwnRepository", "Effect": "Allow", "Action": "s3:GetObject", "Resource": f"{bucket_arn}/{repository}*"},
    )


def warmup_policy(bucket_arn: str, hugging_face_id: str, revision: str) -> PolicyDocument:
    """A model's compile warm-up Jobs: read the repository as the replicas do (the engine streams the
    weights), and write the compile cache of their own revision only (weights_script.cache_prefix)."""
    repository = repository_prefix(hugging_face_id)
    return policy_document(
        *reader_policy(bucket_arn, hugging_face_id, revision)["Statement"],
        {
            "Sid": "WriteOwnCompileCache",
            "Effect": "Allow",
            "Action": ["s3:PutObject", "s3:AbortMultipartUpload"],
            "Resource": f"{bucket_arn}/{weights_script.cache_prefix(repository, revision)}*",
        },
    )


def populate_policy(bucket_arn: str, hugging_face_id: str, revision: str) -> PolicyDocument:
    """A model's populate Job: write its revision; list and tag the repository's other revisions."""
    repository = repository_prefix(hugging_face_id)
    prefix = revision_prefix(hugging_face_id, revision)
    return policy_document(
        _list_repository("ListRepository", bucket_arn, repository),
        {
            "Sid": "WriteOwnRevision",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"],
            "Resource": f"{bucket_arn}/{prefix}/*",
        },
        {
            "Sid": "RetireOtherRevisions",
            "Effect": "Allow",
            "Action": ["s3:GetObjectTagging", "s3:PutObjectTagging", "s3:DeleteObjectTagging", "s3:DeleteObject"],
            "Resource": f"{bucket_arn}/{repository}*",
        },
    )
