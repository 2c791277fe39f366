"""The weights bucket's policies and lifecycle, and the IAM of who reads and writes it. Pure.

Readers (a model's replicas) may list and get only their own revision's prefix. The populate Job
of a model may write that prefix, and tag, untag and delete objects of its own repository's other
revisions (it deletes only those retired `weights.retiredRevisionDays` ago; see weights_script.py).
"""

from __future__ import annotations

from typing import Any

from config.sections.weights import repository_prefix, revision_prefix

PolicyDocument = dict[str, Any]
INCOMPLETE_UPLOAD_DAYS = 1


def bucket_policy(bucket_arn: str) -> PolicyDocument:
    """TLS only: any request over plain HTTP is denied, whoever makes it."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


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


def reader_policy(bucket_arn: str, hugging_face_id: str, revision: str) -> PolicyDocument:
    """A model's replicas: list and read their own revision, nothing else (docs/upstream-facts.md#s3-weights, item 7)."""
    prefix = revision_prefix(hugging_face_id, revision)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ListOwnRevision",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": bucket_arn,
                "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
            },
            {"Sid": "ReadOwnRevision", "Effect": "Allow", "Action": "s3:GetObject", "Resource": f"{bucket_arn}/{prefix}/*"},
        ],
    }


def populate_policy(bucket_arn: str, hugging_face_id: str, revision: str) -> PolicyDocument:
    """A model's populate Job: write its revision; list and tag the repository's other revisions."""
    repository = repository_prefix(hugging_face_id)
    prefix = revision_prefix(hugging_face_id, revision)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ListRepository",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": bucket_arn,
                "Condition": {"StringLike": {"s3:prefix": f"{repository}*"}},
            },
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
        ],
    }
