"""The pull-through cache's IAM for node roles, and the repositories it creates. Pure."""

from __future__ import annotations

import json

from builders.iam import PolicyDocument, policy_document

UNTAGGED_EXPIRY_DAYS = 14


def node_import_policy(partition: str, region: str, account: str, prefixes: list[str]) -> PolicyDocument:
    """Node roles pull through the cache: importing an image on its first pull, and creating its
    repository then (docs/upstream-facts.md#image-cache, item 3; not granted by AmazonEC2ContainerRegistryPullOnly with certainty)."""
    return policy_document(
        {
            "Sid": "PullThroughCacheImport",
            "Effect": "Allow",
            "Action": ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"],
            "Resource": [f"arn:{partition}:ecr:{region}:{account}:repository/{p}/*" for p in sorted(prefixes)],
        }
    )


def repository_lifecycle_policy() -> str:
    """Cached repositories keep tagged images (the pinned releases) and drop untagged ones."""
    return json.dumps(
        {
            "rules": [
                {
                    "rulePriority": 1,
                    "description": f"Expire untagged images after {UNTAGGED_EXPIRY_DAYS} days",
                    "selection": {
                        "tagStatus": "untagged",
                        "countType": "sinceImagePushed",
                        "countUnit": "days",
                        "countNumber": UNTAGGED_EXPIRY_DAYS,
                    },
                    "action": {"type": "expire"},
                }
            ]
        }
    )


def credential(username: str, access_token: str) -> str:
    """The secret's value in the shape ECR reads (docs/upstream-facts.md#image-cache, item 1)."""
    return json.dumps({"username": username, "accessToken": access_token})
