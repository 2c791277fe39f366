"""IAM policy of the AWS Load Balancer Controller, as upstream publishes it for v3.5.0.

Same statements as the project's docs/install/iam_policy.json at v3.5.0 (the tests compare them),
with the partition made explicit. Pure.
"""

from __future__ import annotations

from typing import Any

from builders.iam import policy_document

CLUSTER_TAG = "elbv2.k8s.aws/cluster"


def controller_policy(partition: str = "aws") -> dict[str, Any]:
    ec2 = f"arn:{partition}:ec2:*:*"
    elb = f"arn:{partition}:elasticloadbalancing:*:*"
    tagged_elb = [f"{elb}:targetgroup/*/*", f"{elb}:loadbalancer/net/*/*", f"{elb}:loadbalancer/app/*/*"]
    request_tagged = {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"}}
    resource_tagged = {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
    untag_request = {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true", f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}

    def allow(actions: list[str], resource: str | list[str] = "*", condition: dict[str, Any] | None = None) -> dict[str, Any]:
        statement: dict[str, Any] = {"Effect": "Allow", "Action": actions, "Resource": resource}
        if condition:
            statement["Condition"] = condition
        return statement

    return policy_document(
        allow(["iam:CreateServiceLinkedRole"], condition={"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}),
        allow(
            [
                "ec2:DescribeAccountAttributes",
                "ec2:DescribeAddresses",
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeInternetGateways",
                "ec2:DescribeVpcs",
                "ec2:DescribeVpcPeeringConnections",
                "ec2:DescribeSubnets",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeInstances",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeTags",
                "ec2:GetCoipPoolUsage",
                "ec2:DescribeCoipPools",
                "ec2:GetSecurityGroupsForVpc",
                "ec2:DescribeIpamPools",
                "ec2:DescribeRouteTables",
                "elasticloadbalancing:DescribeLoadBalancers",
                "elasticloadbalancing:DescribeLoadBalancerAttributes",
                "elasticloadbalancing:DescribeListeners",
                "elasticloadbalancing:DescribeListenerCertificates",
                "elasticloadbalancing:DescribeSSLPolicies",
                "elasticloadbalancing:DescribeRules",
                "elasticloadbalancing:DescribeTargetGroups",
                "elasticloadbalancing:DescribeTargetGroupAttributes",
                "elasticloadbalancing:DescribeTargetHealth",
                "elasticloadbalancing:DescribeTags",
                "elasticloadbalancing:DescribeTrustStores",
                "elasticloadbalancing:DescribeListenerAttributes",
                "elasticloadbalancing:DescribeCapacityReservation",
            ]
        ),
        allow(
            [
                "cognito-idp:DescribeUserPoolClient",
                "acm:ListCertificates",
                "acm:DescribeCertificate",
                "iam:ListServerCertificates",
                "iam:GetServerCertificate",
                "waf-regional:GetWebACL",
                "waf-regional:GetWebACLForResource",
                "waf-regional:AssociateWebACL",
                "waf-regional:DisassociateWebACL",
                "wafv2:GetWebACL",
                "wafv2:GetWebACLForResource",
                "wafv2:AssociateWebACL",
                "wafv2:DisassociateWebACL",
                "shield:GetSubscriptionState",
                "shield:DescribeProtection",
                "shield:CreateProtection",
                "shield:DeleteProtection",
            ]
        ),
        allow(["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"]),
        allow(["ec2:CreateSecurityGroup"]),
        allow(
            ["ec2:CreateTags"],
            f"{ec2}:security-group/*",
            {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, **request_tagged},
        ),
        allow(["ec2:CreateTags", "ec2:DeleteTags"], f"{ec2}:security-group/*", untag_request),
        allow(
            ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:DeleteSecurityGroup"],
            condition=resource_tagged,
        ),
        allow(["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"], condition=request_tagged),
        allow(
            [
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:DeleteRule",
            ]
        ),
        allow(["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"], tagged_elb, untag_request),
        allow(
            ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            [
                f"{elb}:listener/net/*/*/*",
                f"{elb}:listener/app/*/*/*",
                f"{elb}:listener-rule/net/*/*/*",
                f"{elb}:listener-rule/app/*/*/*",
            ],
        ),
        allow(
            [
                "elasticloadbalancing:ModifyLoadBalancerAttributes",
                "elasticloadbalancing:SetIpAddressType",
                "elasticloadbalancing:SetSecurityGroups",
                "elasticloadbalancing:SetSubnets",
                "elasticloadbalancing:DeleteLoadBalancer",
                "elasticloadbalancing:ModifyTargetGroup",
                "elasticloadbalancing:ModifyTargetGroupAttributes",
                "elasticloadbalancing:DeleteTargetGroup",
                "elasticloadbalancing:ModifyListenerAttributes",
                "elasticloadbalancing:ModifyCapacityReservation",
                "elasticloadbalancing:ModifyIpPools",
            ],
            condition=resource_tagged,
        ),
        allow(
            ["elasticloadbalancing:AddTags"],
            tagged_elb,
            {"StringEquals": {"elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]}, **request_tagged},
        ),
        allow(["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"], f"{elb}:targetgroup/*/*"),
        allow(
            [
                "elasticloadbalancing:SetWebAcl",
                "elasticloadbalancing:ModifyListener",
                "elasticloadbalancing:AddListenerCertificates",
                "elasticloadbalancing:RemoveListenerCertificates",
                "elasticloadbalancing:ModifyRule",
                "elasticloadbalancing:SetRulePriorities",
            ]
        ),
    )
