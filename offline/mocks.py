"""Recording mocks: every registration (type, name, parent, inputs), with plausible outputs.

The one Mocks implementation the tests and the offline render share. Outputs are
deterministic (ids and autonames are hashes of the resource name), so two renders of the same
config are byte-identical and their diff in a pull request shows only real changes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs, Mocks

from config.checks.account import AccountFile
from config.facts.conventions import ami_parameter
from config.facts.versions import KUBERNETES_VERSIONS

SECRET_SIG = rpc._special_sig_key  # "4dabf18193072939515e22adb298388d"
SECRET_VALUE_SIG = rpc._special_secret_sig
REDACTED = "[secret]"
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
ACCOUNT_ID = "123456789012"

# EC2-style id prefixes by resource type token.
_ID_PREFIX = {
    "aws:ec2/vpc:Vpc": "vpc",
    "aws:ec2/subnet:Subnet": "subnet",
    "aws:ec2/securityGroup:SecurityGroup": "sg",
    "aws:ec2/natGateway:NatGateway": "nat",
    "aws:ec2/eip:Eip": "eipalloc",
    "aws:ec2/internetGateway:InternetGateway": "igw",
    "aws:ec2/routeTable:RouteTable": "rtb",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "vpce",
    "aws:ec2/launchTemplate:LaunchTemplate": "lt",
}


def _hex(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def urn_ref(urn: str) -> str:
    """`type::name` of a URN (the type without its parents' qualification)."""
    qualified, name = urn.split("::")[-2:]
    return f"{qualified.split('$')[-1]}::{name}"


def _provider_ref(reference: str) -> str:
    """`type::name` of a provider reference (`<urn>::<id>`)."""
    parts = reference.split("::")
    return f"{parts[-3].split('$')[-1]}::{parts[-2]}"


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG) == SECRET_VALUE_SIG


def _rebuilt(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """The value with its mappings and lists rebuilt, and `leaf` of everything else (of a secret as a whole)."""
    if is_secret(value):
        return leaf(value)
    if isinstance(value, dict):
        return {k: _rebuilt(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebuilt(v, leaf) for v in value]
    return leaf(value)


def unwrap_secrets(value: Any) -> Any:
    """The value with secret wrappers removed (for tests that read a secret's content)."""
    return _rebuilt(value, lambda v: unwrap_secrets(v["value"]) if is_secret(v) else v)


def _mask(value: Any) -> Any:
    """A secret's shape (unwrapped) with every leaf replaced: keys of a secret map stay visible."""
    return _rebuilt(value, lambda _: REDACTED)


def redact(value: Any) -> Any:
    """The value with every secret replaced by "[secret]", and integral floats as ints.

    Pulumi sends every number as a float; manifests and JSON read better with `replicas: 2`.
    """
    return _rebuilt(value, _redacted)


def _redacted(value: Any) -> Any:
    if is_secret(value):
        return _mask(unwrap_secrets(value))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is rpc.UNKNOWN:
        return "[unknown]"
    return value


@dataclass
class Registration:
    """One registered resource, as the engine would have seen it."""

    type: str
    name: str
    parent: str | None
    inputs: dict[str, Any]
    custom: bool
    dependencies: list[str] = field(default_factory=list)
    provider: str | None = None
    id: str | None = None
    identity: str = ""
    """What the engine keys state by: `<type chain>::<name>` (the URN without stack and project).
    Renaming a resource or moving it under a parent of another type changes it, and then
    `pulumi up` replaces the resource unless an alias names the old identity."""
    aliases: list[str] = field(default_factory=list)
    """Old identities this resource answers to (its `aliases` option, and those inherited from its parents')."""
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    """How long the engine waits per operation (create, update, delete) where the program sets it."""
    ignore_changes: list[str] = field(default_factory=list)
    """Input paths the engine keeps at their old value on update (the `ignore_changes` option)."""
    delete_before_replace: bool = False
    """A replacement deletes the old object before it creates the new one (the `delete_before_replace` option)."""

    @property
    def ref(self) -> str:
        return f"{self.type}::{self.name}"

    def redacted(self) -> dict[str, Any]:
        shown = {"type": self.type, "name": self.name, "parent": self.parent, "inputs": redact(self.inputs)}
        return {**shown, "ignoreChanges": self.ignore_changes} if self.ignore_changes else shown


class RecordingMocks(Mocks):
    """Plausible computed outputs for AWS, EKS and Kubernetes resources."""

    def __init__(
        self, region: str = "us-east-1", stack_outputs: dict[str, dict[str, Any]] | None = None, account: AccountFile | None = None
    ):
        self.region = region
        self.stack_outputs = stack_outputs or {}
        """Outputs of other stacks, by fully qualified name, for StackReference reads."""
        self.account = account
        """When set, the account data sources (quotas, offerings, roles, ...) answer from it."""

    # -- resources ---------------------------------------------------------------------------
    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        typ, name, inputs = args.typ, args.name, dict(args.inputs)
        state: dict[str, Any] = dict(inputs)
        if typ == "pulumi:pulumi:StackReference":
            ref = str(inputs.get("name") or args.resource_id or name)
            outputs = self.stack_outputs.get(ref, {})
            return ref, {"name": ref, "outputs": outputs, "secretOutputNames": sorted(outputs.get("__secret__", []))}
        if typ.startswith("aws:"):
            return self._aws(typ, name, state)
        if typ == "eks:index:Cluster":
            return f"{name}-id", self._eks_cluster(name, inputs)
        if typ.startswith("kubernetes:helm.sh/"):
            state.setdefault("name", name)
            state["status"] = {"name": state["name"], "namespace": inputs.get("namespace", "default"), "status": "deployed", "version": 1}
            return f"{state.get('namespace', 'default')}/{state['name']}", state
        if typ == "kubernetes:networking.k8s.io/v1:Ingress":
            annotations = (inputs.get("metadata") or {}).get("annotations") or {}
            group = annotations.get("alb.ingress.kubernetes.io/group.name", name)
            internal = annotations.get("alb.ingress.kubernetes.io/scheme") != "internet-facing"
            prefix = "internal-" if internal else ""
            host = f"{prefix}k8s-{group.replace('-', '')[:12]}-{_hex('alb', group, length=10)}.{self.region}.elb.amazonaws.com"
            state["status"] = {"loadBalancer": {"ingress": [{"hostname": host}]}}
        if typ.startswith("kubernetes:") and isinstance(state.get("metadata"), dict):
            meta = dict(state["metadata"])
            meta.setdefault("name", name)
            state["metadata"] = meta
            ns = meta.get("namespace")
            return f"{ns}/{meta['name']}" if ns else str(meta["name"]), state
        return f"{name}-id", state

    def _aws(self, typ: str, name: str, state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        module = typ.split(":")[1].split("/")[0]
        physical = state.get("name") or (
            f"{state['namePrefix']}{_hex(typ, name, length=8)}" if state.get("namePrefix") else f"{name}-{_hex(typ, name, length=7)}"
        )
        state.setdefault("name", physical)
        region, account = self.region, ACCOUNT_ID
        resource_id = f"{_ID_PREFIX[typ]}-{_hex(typ, name)}" if typ in _ID_PREFIX else physical
        arn = f"arn:aws:{module}:{region}:{account}:{typ.split(':')[-1].lower()}/{physical}"
        if typ == "aws:s3/bucket:Bucket":
            physical = state.get("bucket") or f"{state.get('bucketPrefix', name)}{_hex(typ, name, length=12)}"
            state["bucket"] = physical
            resource_id = physical
            arn = f"arn:aws:s3:::{physical}"
        elif typ == "aws:iam/role:Role":
            arn = f"arn:aws:iam::{account}:role/{physical}"
            state["uniqueId"] = "AROA" + _hex(typ, name, length=17).upper()
        elif typ == "aws:iam/policy:Policy":
            arn = f"arn:aws:iam::{account}:policy/{physical}"
        elif typ == "aws:iam/instanceProfile:InstanceProfile":
            arn = f"arn:aws:iam::{account}:instance-profile/{physical}"
        elif typ == "aws:sqs/queue:Queue":
            arn = f"arn:aws:sqs:{region}:{account}:{physical}"
            resource_id = f"https://sqs.{region}.amazonaws.com/{account}/{physical}"
            state["url"] = resource_id
        elif typ == "aws:kms/key:Key":
            h = _hex(typ, name, length=32)
            resource_id = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"
            state["keyId"] = resource_id
            arn = f"arn:aws:kms:{region}:{account}:key/{resource_id}"
        elif typ == "aws:cloudwatch/eventRule:EventRule":
            arn = f"arn:aws:events:{region}:{account}:rule/{physical}"
        elif typ == "aws:eks/cluster:Cluster":
            state["endpoint"] = f"https://{_hex(typ, name, length=32).upper()}.gr7.{region}.eks.amazonaws.com"
            arn = f"arn:aws:eks:{region}:{account}:cluster/{physical}"
        elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
            state["latestVersion"] = 1
            state["defaultVersion"] = 1
            arn = f"arn:aws:ec2:{region}:{account}:launch-template/{resource_id}"
        elif typ == "aws:ec2/placementGroup:PlacementGroup":
            # EC2 names it by `name` and identifies it by pg-…, which a node class's placementGroupSelector takes
            state["placementGroupId"] = f"pg-{_hex(typ, name)}"
            arn = f"arn:aws:ec2:{region}:{account}:placement-group/{physical}"
        elif typ == "aws:eks/nodeGroup:NodeGroup":
            arn = f"arn:aws:eks:{region}:{account}:nodegroup/{state.get('clusterName')}/{physical}/{_hex(typ, name, length=8)}"
        elif typ in _ID_PREFIX:
            arn = f"arn:aws:{module}:{region}:{account}:{_ID_PREFIX[typ]}/{resource_id}"
        state.setdefault("arn", arn)
        state["id"] = resource_id
        return resource_id, state

    def _eks_cluster(self, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        cluster_name = inputs.get("name") or name
        endpoint = f"https://{_hex('eks', cluster_name, length=32).upper()}.gr7.{self.region}.eks.amazonaws.com"
        issuer = f"oidc.eks.{self.region}.amazonaws.com/id/{_hex('oidc', cluster_name, length=32).upper()}"
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": "TU9DSy1DQQ=="}}],
            "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
            "current-context": cluster_name,
            "users": [
                {
                    "name": cluster_name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", self.region],
                        }
                    },
                }
            ],
        }
        oidc = bool(inputs.get("createOidcProvider"))
        return {
            **inputs,
            "kubeconfig": kubeconfig,
            "kubeconfigJson": json.dumps(kubeconfig),
            "clusterSecurityGroupId": f"sg-{_hex('cluster-sg', cluster_name)}",
            "nodeSecurityGroupId": f"sg-{_hex('node-sg', cluster_name)}",
            "oidcProviderArn": f"arn:aws:iam::{ACCOUNT_ID}:oidc-provider/{issuer}" if oidc else "",
            "oidcProviderUrl": f"https://{issuer}",
            "oidcIssuer": issuer,
            "eksClusterEndpoint": endpoint,
        }

    # -- function calls ----------------------------------------------------------------------
    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return self._call(args), []

    def _call(self, args: MockCallArgs) -> dict[str, Any]:
        region = self.region
        if self.account is not None and args.token in ACCOUNT_TOKENS:
            return _account_answer(self.account, args.token, dict(args.args))
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            # the account answers' caller when they name one (preflight checks it), else an offline user
            caller = (self.account.caller if self.account is not None else None) or f"arn:aws:iam::{ACCOUNT_ID}:user/offline"
            return {"accountId": ACCOUNT_ID, "arn": caller, "userId": "OFFLINE", "id": ACCOUNT_ID}
        if args.token == "aws:index/getRegion:getRegion":
            return {"name": region, "region": region, "id": region, "description": region, "endpoint": f"ec2.{region}.amazonaws.com"}
        if args.token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws", "reverseDnsPrefix": "com.amazonaws"}
        if args.token == "aws:eks/getCluster:getCluster":
            cluster = str(args.args.get("name"))
            if self.account is not None and self.account.cluster_exists is False:
                raise NotFoundError(f"ResourceNotFoundException: No cluster found for name: {cluster}")
            return {
                "name": cluster,
                "id": cluster,
                "arn": f"arn:aws:eks:{region}:{ACCOUNT_ID}:cluster/{cluster}",
                "endpoint": f"https://{_hex('eks', cluster, length=32).upper()}.gr7.{region}.eks.amazonaws.com",
                "vpcConfig": {"clusterSecurityGroupId": f"sg-{_hex('eks-primary-sg', cluster)}"},
            }
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            letters = "abcdef"
            return {
                "names": [f"{region}{c}" for c in letters],
                "zoneIds": [f"use1-az{i + 1}" for i in range(len(letters))],
                "id": region,
                "groupNames": [region],
                "state": "available",
            }
        return {}


ACCOUNT_TOKENS = frozenset(
    {
        "aws:index/getAvailabilityZones:getAvailabilityZones",
        "aws:servicequotas/getServiceQuota:getServiceQuota",
        "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings",
        "aws:ssm/getParameter:getParameter",
        "aws:eks/getAddonVersion:getAddonVersion",
        "aws:iam/getRole:getRole",
        "aws:iam/getUser:getUser",
        "aws:acm/getCertificate:getCertificate",
        "aws:ec2/getVpc:getVpc",
        "aws:ec2/getSubnet:getSubnet",
    }
)


class NotFoundError(Exception):
    """What a data source does for something the account does not have (its message names it so)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"NotFound: {what} does not exist")


def _account_answer(account: AccountFile, token: str, args: dict[str, Any]) -> dict[str, Any]:
    """A data source's answer from account answers, shaped as pulumi-aws returns it."""
    kind = token.split(":")[1]
    if kind == "index/getAvailabilityZones":
        return {"zoneIds": list(account.zones), "names": list(account.zones.values()), "id": account.region, "state": "available"}
    if kind == "servicequotas/getServiceQuota":
        code = args.get("quotaCode")
        if code not in account.quotas:
            raise NotFoundError(f"quota {code}")
        return {"quotaCode": code, "serviceCode": "ec2", "value": account.quotas[code], "id": code}
    if kind == "ec2/getInstanceTypeOfferings":
        wanted = {v for f in args.get("filters") or [] if f.get("name") == "instance-type" for v in f.get("values", [])}
        pairs = [(t, z) for z, types in sorted(account.offerings.items()) for t in types if not wanted or t in wanted]
        return {
            "instanceTypes": [t for t, _ in pairs],
            "locations": [z for _, z in pairs],
            "locationTypes": ["availability-zone"] * len(pairs),
            "id": account.region,
        }
    if kind == "ssm/getParameter":
        name = str(args.get("name"))
        for family, releases in account.ami_releases.items():
            for release in releases:
                if any(name == ami_parameter(family, k8s, release) for k8s in KUBERNETES_VERSIONS):
                    return {"name": name, "value": f"ami-{_hex(name)}", "insecureValue": f"ami-{_hex(name)}", "type": "String", "id": name}
        raise NotFoundError(name)
    if kind == "eks/getAddonVersion":
        addon = str(args.get("addonName"))
        if not account.addon_versions.get(addon):
            raise NotFoundError(addon)
        return {
            "addonName": addon,
            "kubernetesVersion": args.get("kubernetesVersion"),
            "version": account.addon_versions[addon][-1],
            "id": addon,
        }
    if kind in ("iam/getRole", "iam/getUser"):
        name = str(args.get("name") or args.get("userName"))
        if name.startswith("access-denied"):
            raise PermissionError(f"AccessDenied: not authorized to perform iam:GetRole on {name}")
        if name == "AWSServiceRoleForEC2Spot" and account.spot_service_linked_role:
            return {"name": name, "arn": f"arn:aws:iam::{ACCOUNT_ID}:role/aws-service-role/spot.amazonaws.com/{name}", "id": name}
        found = next((a for a in account.roles if a.rsplit("/", 1)[-1] == name), None)
        if found is None:
            raise NotFoundError(name)
        return {"name": name, "userName": name, "arn": found, "id": name}
    if kind == "acm/getCertificate":
        domain = args.get("domain")
        cert = next((c for c in account.certificates if c.domain == domain), None)
        if cert is None:
            raise NotFoundError(str(domain))
        return {"arn": cert.arn, "domain": cert.domain, "status": cert.status, "id": cert.arn}
    if kind == "ec2/getVpc":
        vpc = next((v for v in account.vpcs if v.id == args.get("id")), None)
        if vpc is None:
            raise NotFoundError(str(args.get("id")))
        associations = [
            {"associationId": f"vpc-cidr-assoc-{i}", "cidrBlock": c, "state": "associated"}
            for i, c in enumerate([vpc.cidr, *vpc.secondary_cidrs])
        ]
        return {"id": vpc.id, "cidrBlock": vpc.cidr, "cidrBlockAssociations": associations}
    if kind == "ec2/getSubnet":
        subnet = next((s for s in account.subnets if s.id == args.get("id")), None)
        if subnet is None:
            raise NotFoundError(str(args.get("id")))
        return {"id": subnet.id, "vpcId": subnet.vpc_id, "availabilityZone": subnet.zone, "cidrBlock": subnet.cidr, "tags": subnet.tags}
    raise NotFoundError(token)


def _chain_of(urn: str) -> str:
    """The type chain of a URN, without the root stack (the engine leaves it out of its children's URNs)."""
    chain = urn.split("::")[2]
    return "" if chain == ROOT_STACK_TYPE else chain


def _join(parent_chain: str, type_: str) -> str:
    return f"{parent_chain}${type_}" if parent_chain else type_


class RecordingMonitor(MockMonitor):
    """A mock monitor that keeps every registration in order, with the identity the engine would
    key its state by and the old identities its aliases keep."""

    def __init__(self, mocks: RecordingMocks):
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        # The mock's own URNs keep only the parent's last type; the engine keeps the whole chain.
        self._chains: dict[str, str] = {}
        self._alias_chains: dict[str, list[str]] = {}
        """Old identities of each registered resource, which its children inherit."""
        self._names: dict[str, str] = {}

    def _identity(self, request: Any) -> tuple[str, str, list[str]]:
        """(type chain, identity, old identities) of a registration, as the engine computes them."""
        parent_chain = self._chains.get(request.parent, "") if request.parent else ""
        chain = _join(parent_chain, request.type)
        old: list[str] = []
        for alias in request.aliases:
            if alias.urn:
                old.append("::".join(alias.urn.split("::")[2:4]))
                continue
            spec = alias.spec
            if spec.noParent:
                alias_parent = ""
            elif spec.parentUrn:
                alias_parent = self._chains.get(spec.parentUrn, _chain_of(spec.parentUrn))
            else:
                alias_parent = parent_chain
            alias_chain = _join(alias_parent, spec.type or request.type)
            old.append(f"{alias_chain}::{spec.name or request.name}")
        # A parent's aliases carry over to its children: the parent's old type chain, and, for a child
        # named after its parent (`<parent>-role`), the parent's old name in front (as the engine does).
        parent_name = self._names.get(request.parent, "") if request.parent else ""
        for parent_old in self._alias_chains.get(request.parent, []) if request.parent else []:
            old_chain, old_parent_name = parent_old.rsplit("::", 1)
            name = request.name
            if parent_name and name.startswith(parent_name):
                name = old_parent_name + name[len(parent_name) :]
            old.append(f"{_join(old_chain, request.type)}::{name}")
        return chain, f"{chain}::{request.name}", old

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        if request.type == ROOT_STACK_TYPE:
            return super().RegisterResource(request)  # type: ignore[no-untyped-call]
        chain, identity, old = self._identity(request)
        registration = Registration(
            type=request.type,
            name=request.name,
            parent=urn_ref(request.parent) if request.parent else None,
            inputs=rpc.deserialize_properties(request.object, keep_unknowns=True),
            custom=bool(request.custom),
            dependencies=sorted({urn_ref(u) for u in request.dependencies}),
            provider=_provider_ref(request.provider) if request.provider else None,
            identity=identity,
            aliases=sorted(set(old)),
            custom_timeouts={
                op: getattr(request.customTimeouts, op) for op in ("create", "update", "delete") if getattr(request.customTimeouts, op)
            },
            ignore_changes=list(request.ignoreChanges),
            delete_before_replace=bool(request.deleteBeforeReplace),
        )
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        registration.id = response.id or None
        self._chains[response.urn] = chain
        self._alias_chains[response.urn] = sorted(set(old))
        self._names[response.urn] = request.name
        self.registrations.append(registration)
        return response
