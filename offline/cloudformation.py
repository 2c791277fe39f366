"""The captured AWS resources of one render as a CloudFormation template, for CloudFormation scanners.

The program is Pulumi, not CloudFormation; this translation exists so that tools written for
CloudFormation (checkov's CloudFormation checks) can judge what the program would create. Every
AWS resource type the program registers has a translation (an unknown type fails loudly, so a new
resource cannot slip past the scanner). Companion resources that CloudFormation models as
properties of their parent are folded in: role policy attachments into the role's
`ManagedPolicyArns`, an S3 bucket's encryption, public-access block, ownership controls and
lifecycle into the bucket, and the route-table, tag and association resources are skipped (no
security property; listed in SKIPPED).

`eks:index:Cluster` (pulumi-eks, a component) becomes the `AWS::EKS::Cluster` it creates, with
the endpoint, logging, encryption and access settings the component passes through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from offline.mocks import Registration, redact, unwrap_secrets

SKIPPED = frozenset(
    {
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
        "aws:ec2/tag:Tag",
        "aws:cloudwatch/eventTarget:EventTarget",
        "aws:kms/alias:Alias",
        "aws:secretsmanager/secretVersion:SecretVersion",
        # folded into their parent (see _fold)
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    }
)
"""Types with nothing of their own to scan: skipped, or folded into the resource they configure."""


FOLD_TARGETS = frozenset({"aws:iam/role:Role", "aws:s3/bucket:Bucket"})
"""Resources that companions fold into, found by their physical name (the role, the bucket)."""


class UntranslatedTypeError(Exception):
    """An AWS resource type the program registers that has no CloudFormation translation."""


def logical_id(registration: Registration) -> str:
    """CloudFormation logical ids are alphanumeric: the resource's name in CamelCase, with its type."""
    words = re.split(r"[^A-Za-z0-9]+", f"{registration.type.rsplit(':', 1)[-1]} {registration.name}")
    return "".join(w[:1].upper() + w[1:] for w in words if w)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _tags(inputs: dict[str, Any]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": str(v)} for k, v in sorted((inputs.get("tags") or {}).items())]


def _cluster(i: dict[str, Any]) -> dict[str, Any]:
    public = i.get("endpointPublicAccess", True)
    vpc: dict[str, Any] = {
        "SubnetIds": list(i.get("privateSubnetIds") or []) + list(i.get("publicSubnetIds") or []),
        "EndpointPublicAccess": public,
        "EndpointPrivateAccess": i.get("endpointPrivateAccess", False),
    }
    if public:
        vpc["PublicAccessCidrs"] = list(i.get("publicAccessCidrs") or ["0.0.0.0/0"])
    props: dict[str, Any] = {
        "Name": i.get("name"),
        "Version": i.get("version"),
        "RoleArn": "arn:aws:iam::123456789012:role/eks-cluster",
        "ResourcesVpcConfig": vpc,
        "Logging": {"ClusterLogging": {"EnabledTypes": [{"Type": t} for t in i.get("enabledClusterLogTypes") or []]}},
        "AccessConfig": {"AuthenticationMode": i.get("authenticationMode", "CONFIG_MAP")},
        "Tags": _tags(i),
    }
    if i.get("encryptionConfigKeyArn"):
        props["EncryptionConfig"] = [{"Resources": ["secrets"], "Provider": {"KeyArn": i["encryptionConfigKeyArn"]}}]
    return props


def _launch_template(i: dict[str, Any]) -> dict[str, Any]:
    metadata = i.get("metadataOptions") or {}
    data: dict[str, Any] = {
        "MetadataOptions": {
            "HttpEndpoint": metadata.get("httpEndpoint", "enabled"),
            "HttpTokens": metadata.get("httpTokens", "optional"),
            "HttpPutResponseHopLimit": metadata.get("httpPutResponseHopLimit", 1),
        },
        "BlockDeviceMappings": [
            {
                "DeviceName": m.get("deviceName"),
                "Ebs": {
                    "Encrypted": str((m.get("ebs") or {}).get("encrypted", "false")).lower() == "true",
                    "VolumeSize": (m.get("ebs") or {}).get("volumeSize"),
                    "VolumeType": (m.get("ebs") or {}).get("volumeType"),
                },
            }
            for m in i.get("blockDeviceMappings") or []
        ],
    }
    return {"LaunchTemplateData": data}


def _role(i: dict[str, Any]) -> dict[str, Any]:
    """The role with whatever it carries itself (inline and managed lists), attachments folded in later."""
    return {
        "AssumeRolePolicyDocument": _json(i["assumeRolePolicy"]),
        "ManagedPolicyArns": list(i.get("managedPolicyArns") or []),
        "Policies": [{"PolicyName": p.get("name", "inline"), "PolicyDocument": _json(p["policy"])} for p in i.get("inlinePolicies") or []],
        "Tags": _tags(i),
    }


def _bucket(i: dict[str, Any]) -> dict[str, Any]:
    return {"BucketName": i.get("bucket") or i.get("bucketPrefix"), "Tags": _tags(i)}


def _security_group_rule(i: dict[str, Any], peer_group_key: str) -> dict[str, Any]:
    """An ingress or egress rule: its peer group under the key of its direction."""
    return {
        "GroupId": i["securityGroupId"],
        "IpProtocol": i["ipProtocol"],
        "FromPort": i.get("fromPort"),
        "ToPort": i.get("toPort"),
        **({"CidrIp": i["cidrIpv4"]} if i.get("cidrIpv4") else {}),
        **({peer_group_key: i["referencedSecurityGroupId"]} if i.get("referencedSecurityGroupId") else {}),
        "Description": i.get("description", ""),
    }


TRANSLATIONS: dict[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "eks:index:Cluster": ("AWS::EKS::Cluster", _cluster),
    "aws:ec2/launchTemplate:LaunchTemplate": ("AWS::EC2::LaunchTemplate", _launch_template),
    "aws:iam/role:Role": ("AWS::IAM::Role", _role),
    "aws:iam/policy:Policy": (
        "AWS::IAM::ManagedPolicy",
        lambda i: {"PolicyDocument": _json(i["policy"]), "Description": i.get("description", "")},
    ),
    "aws:iam/rolePolicy:RolePolicy": (
        "AWS::IAM::Policy",
        lambda i: {"PolicyName": "inline", "PolicyDocument": _json(i["policy"]), "Roles": [i["role"]]},
    ),
    "aws:kms/key:Key": (
        "AWS::KMS::Key",
        lambda i: {
            "Description": i.get("description", ""),
            "EnableKeyRotation": bool(i.get("enableKeyRotation", False)),
            "PendingWindowInDays": i.get("deletionWindowInDays", 30),
            "KeyPolicy": _json(i.get("policy") or "{}"),
            "Tags": _tags(i),
        },
    ),
    "aws:sqs/queue:Queue": (
        "AWS::SQS::Queue",
        lambda i: {
            "QueueName": i.get("name"),
            "MessageRetentionPeriod": i.get("messageRetentionSeconds"),
            **({"SqsManagedSseEnabled": True} if i.get("sqsManagedSseEnabled") else {}),
            **({"KmsMasterKeyId": i["kmsMasterKeyId"]} if i.get("kmsMasterKeyId") else {}),
            "Tags": _tags(i),
        },
    ),
    "aws:sqs/queuePolicy:QueuePolicy": (
        "AWS::SQS::QueuePolicy",
        lambda i: {"PolicyDocument": _json(i["policy"]), "Queues": [i["queueUrl"]]},
    ),
    "aws:s3/bucket:Bucket": ("AWS::S3::Bucket", _bucket),
    "aws:s3/bucketPolicy:BucketPolicy": (
        "AWS::S3::BucketPolicy",
        lambda i: {"Bucket": i["bucket"], "PolicyDocument": _json(i["policy"])},
    ),
    "aws:cloudwatch/logGroup:LogGroup": (
        "AWS::Logs::LogGroup",
        lambda i: {
            "LogGroupName": i.get("name"),
            **({"RetentionInDays": i["retentionInDays"]} if i.get("retentionInDays") else {}),
            **({"KmsKeyId": i["kmsKeyId"]} if i.get("kmsKeyId") else {}),
            "Tags": _tags(i),
        },
    ),
    "aws:cloudwatch/eventRule:EventRule": (
        "AWS::Events::Rule",
        lambda i: {"Description": i.get("description", ""), "EventPattern": _json(i["eventPattern"]), "State": "ENABLED"},
    ),
    "aws:ec2/vpc:Vpc": (
        "AWS::EC2::VPC",
        lambda i: {
            "CidrBlock": i["cidrBlock"],
            "EnableDnsHostnames": i.get("enableDnsHostnames", False),
            "EnableDnsSupport": i.get("enableDnsSupport", True),
            "Tags": _tags(i),
        },
    ),
    "aws:ec2/subnet:Subnet": (
        "AWS::EC2::Subnet",
        lambda i: {
            "VpcId": i["vpcId"],
            "CidrBlock": i["cidrBlock"],
            "AvailabilityZoneId": i.get("availabilityZoneId"),
            "MapPublicIpOnLaunch": bool(i.get("mapPublicIpOnLaunch", False)),
            "Tags": _tags(i),
        },
    ),
    "aws:ec2/internetGateway:InternetGateway": ("AWS::EC2::InternetGateway", lambda i: {"Tags": _tags(i)}),
    "aws:ec2/eip:Eip": ("AWS::EC2::EIP", lambda i: {"Domain": i.get("domain", "vpc"), "Tags": _tags(i)}),
    "aws:ec2/natGateway:NatGateway": (
        "AWS::EC2::NatGateway",
        lambda i: {"AllocationId": i["allocationId"], "SubnetId": i["subnetId"], "Tags": _tags(i)},
    ),
    "aws:ec2/routeTable:RouteTable": (
        "AWS::EC2::RouteTable",
        lambda i: {"VpcId": i["vpcId"], "Tags": _tags(i)},
    ),
    "aws:ec2/vpcEndpoint:VpcEndpoint": (
        "AWS::EC2::VPCEndpoint",
        lambda i: {
            "VpcId": i["vpcId"],
            "ServiceName": i["serviceName"],
            "VpcEndpointType": i.get("vpcEndpointType", "Gateway"),
            **({"RouteTableIds": i["routeTableIds"]} if i.get("routeTableIds") else {}),
            **({"SubnetIds": i["subnetIds"]} if i.get("subnetIds") else {}),
            **({"PolicyDocument": _json(i["policy"])} if i.get("policy") else {}),
        },
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": (
        "AWS::EC2::SecurityGroupIngress",
        lambda i: _security_group_rule(i, "SourceSecurityGroupId"),
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": (
        "AWS::EC2::SecurityGroupEgress",
        lambda i: _security_group_rule(i, "DestinationSecurityGroupId"),
    ),
    "aws:ec2/securityGroup:SecurityGroup": (
        "AWS::EC2::SecurityGroup",
        lambda i: {"GroupDescription": i.get("description", ""), "VpcId": i["vpcId"], "Tags": _tags(i)},
    ),
    "aws:ec2/placementGroup:PlacementGroup": (
        "AWS::EC2::PlacementGroup",
        lambda i: {"Strategy": i["strategy"], "Tags": _tags(i)},
    ),
    "aws:eks/nodeGroup:NodeGroup": (
        "AWS::EKS::Nodegroup",
        lambda i: {
            "ClusterName": i["clusterName"],
            "NodeRole": i["nodeRoleArn"],
            "Subnets": i["subnetIds"],
            "AmiType": i.get("amiType"),
            "CapacityType": i.get("capacityType"),
            "InstanceTypes": i.get("instanceTypes"),
            **({"LaunchTemplate": {"Id": i["launchTemplate"]["id"]}} if i.get("launchTemplate") else {}),
            **({"RemoteAccess": {"Ec2SshKey": i["remoteAccess"]["ec2SshKey"]}} if i.get("remoteAccess") else {}),
            "ScalingConfig": {
                "MinSize": i["scalingConfig"]["minSize"],
                "MaxSize": i["scalingConfig"]["maxSize"],
                "DesiredSize": i["scalingConfig"]["desiredSize"],
            },
        },
    ),
    "aws:eks/addon:Addon": (
        "AWS::EKS::Addon",
        lambda i: {"ClusterName": i["clusterName"], "AddonName": i["addonName"], "AddonVersion": i.get("addonVersion")},
    ),
    "aws:eks/accessEntry:AccessEntry": (
        "AWS::EKS::AccessEntry",
        lambda i: {"ClusterName": i["clusterName"], "PrincipalArn": i["principalArn"], "Type": i.get("type", "STANDARD")},
    ),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": (
        "AWS::EKS::PodIdentityAssociation",
        lambda i: {
            "ClusterName": i["clusterName"],
            "Namespace": i["namespace"],
            "ServiceAccount": i["serviceAccount"],
            "RoleArn": i["roleArn"],
        },
    ),
    "aws:secretsmanager/secret:Secret": (
        "AWS::SecretsManager::Secret",
        lambda i: {
            "Name": i.get("name"),
            "Description": i.get("description", ""),
            **({"KmsKeyId": i["kmsKeyId"]} if i.get("kmsKeyId") else {}),
            "Tags": _tags(i),
        },
    ),
    "aws:ecr/pullThroughCacheRule:PullThroughCacheRule": (
        "AWS::ECR::PullThroughCacheRule",
        lambda i: {
            "EcrRepositoryPrefix": i["ecrRepositoryPrefix"],
            "UpstreamRegistryUrl": i["upstreamRegistryUrl"],
            **({"CredentialArn": i["credentialArn"]} if i.get("credentialArn") else {}),
        },
    ),
    "aws:ecr/repositoryCreationTemplate:RepositoryCreationTemplate": (
        "AWS::ECR::RepositoryCreationTemplate",
        lambda i: {
            "Prefix": i["prefix"],
            "AppliedFor": i["appliedFors"],
            "EncryptionConfiguration": {"EncryptionType": (i.get("encryptionConfigurations") or [{}])[0].get("encryptionType")},
            **({"ImageTagMutability": i["imageTagMutability"]} if i.get("imageTagMutability") else {}),
            **({"LifecyclePolicy": i["lifecyclePolicy"]} if i.get("lifecyclePolicy") else {}),
        },
    ),
}


def _fold(resources: dict[str, dict[str, Any]], by_physical: dict[str, str], reg: Registration, inputs: dict[str, Any]) -> None:
    """Companion resources that CloudFormation models as properties of their parent."""
    if reg.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
        resources[by_physical[inputs["role"]]]["Properties"]["ManagedPolicyArns"].append(inputs["policyArn"])
        return
    if not reg.type.startswith("aws:s3/"):
        return
    bucket = resources[by_physical[inputs["bucket"]]]["Properties"]
    if reg.type.endswith(":BucketServerSideEncryptionConfiguration"):
        bucket["BucketEncryption"] = {
            "ServerSideEncryptionConfiguration": [
                {
                    "ServerSideEncryptionByDefault": {
                        "SSEAlgorithm": r["applyServerSideEncryptionByDefault"]["sseAlgorithm"],
                        **(
                            {"KMSMasterKeyID": r["applyServerSideEncryptionByDefault"]["kmsMasterKeyId"]}
                            if r["applyServerSideEncryptionByDefault"].get("kmsMasterKeyId")
                            else {}
                        ),
                    }
                }
                for r in inputs["rules"]
            ]
        }
    elif reg.type.endswith(":BucketPublicAccessBlock"):
        bucket["PublicAccessBlockConfiguration"] = {
            "BlockPublicAcls": inputs.get("blockPublicAcls", False),
            "BlockPublicPolicy": inputs.get("blockPublicPolicy", False),
            "IgnorePublicAcls": inputs.get("ignorePublicAcls", False),
            "RestrictPublicBuckets": inputs.get("restrictPublicBuckets", False),
        }
    elif reg.type.endswith(":BucketOwnershipControls"):
        bucket["OwnershipControls"] = {"Rules": [{"ObjectOwnership": inputs["rule"]["objectOwnership"]}]}
    elif reg.type.endswith(":BucketLifecycleConfiguration"):
        bucket["LifecycleConfiguration"] = {
            "Rules": [
                {
                    "Id": r.get("id"),
                    "Status": r.get("status", "Enabled"),
                    **(
                        {
                            "AbortIncompleteMultipartUpload": {
                                "DaysAfterInitiation": r["abortIncompleteMultipartUpload"]["daysAfterInitiation"]
                            }
                        }
                        if r.get("abortIncompleteMultipartUpload")
                        else {}
                    ),
                }
                for r in inputs["rules"]
            ]
        }


def _abort_incomplete(rule: dict[str, Any]) -> dict[str, Any]:
    found = rule.get("abortIncompleteMultipartUpload")
    return {"AbortIncompleteMultipartUpload": {"DaysAfterInitiation": found["daysAfterInitiation"]}} if found else {}


def template(registrations: list[Registration]) -> dict[str, Any]:
    """A CloudFormation template holding every AWS resource the render registers."""
    resources: dict[str, dict[str, Any]] = {}
    by_physical: dict[str, str] = {}
    later: list[tuple[Registration, dict[str, Any]]] = []
    for reg in registrations:
        if not (reg.type.startswith("aws:") or reg.type == "eks:index:Cluster"):
            continue
        inputs = redact(unwrap_secrets(reg.inputs))
        assert isinstance(inputs, dict)
        if reg.type in SKIPPED:
            later.append((reg, inputs))
            continue
        if reg.type not in TRANSLATIONS:
            raise UntranslatedTypeError(f"{reg.type} ({reg.name}) has no CloudFormation translation in offline/cloudformation.py")
        cfn_type, translate = TRANSLATIONS[reg.type]
        lid = logical_id(reg)
        resources[lid] = {"Type": cfn_type, "Properties": translate(inputs), "Metadata": {"PulumiName": reg.name}}
        if reg.type in FOLD_TARGETS and reg.id:
            by_physical[reg.id] = lid
    for reg, inputs in later:
        _fold(resources, by_physical, reg, inputs)
    return {"AWSTemplateFormatVersion": "2010-09-09", "Description": "llm-platform render (offline)", "Resources": resources}
