"""`models`: one vLLM serving stack per entry."""

from __future__ import annotations

import re
import zoneinfo
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from config.facts import versions
from config.sections import cron
from config.sections.base import ConfigModel
from config.sections.gateway import RoutingConfig
from config.sections.observability import Slo
from config.sections.types import (
    CommitRevision,
    Duration,
    Fraction,
    HuggingFaceId,
    ImageDigest,
    K8sName,
    Quantity,
    config_error,
    parse_quantity,
)
from config.sections.weights import ModelWeights

_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_RELEASE = re.compile(r"^v?([0-9]+)\.([0-9]+)\.([0-9]+)(?:[-.+].*)?$")
_REPOSITORY = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$")

# Flags the platform sets itself (from typed fields) or must never see in extraArgs.
MANAGED_FLAGS = {
    "--model": "the model comes from huggingFaceId and revision",
    "--revision": "set revision",
    "--served-model-name": "the served name is the model's name (it labels every metric)",
    "--host": "the platform binds 0.0.0.0",
    "--port": "the platform serves on port 8000",
    "--tensor-parallel-size": "set tensorParallelSize",
    "-tp": "set tensorParallelSize",
    "--pipeline-parallel-size": "set pipelineParallelSize",
    "-pp": "set pipelineParallelSize",
    "--nnodes": "a multi-node replica's group size is pipelineParallelSize",
    "--node-rank": "each pod of a multi-node replica takes its rank from the LeaderWorkerSet",
    "--master-addr": "each pod of a multi-node replica finds its leader through the LeaderWorkerSet",
    "--headless": "the workers of a multi-node replica run headless, its leader serves",
    "--max-model-len": "set maxModelLen",
    "--gpu-memory-utilization": "set gpuMemoryUtilization",
    "--max-num-seqs": "set maxNumSeqs",
    "--max-num-queued-reqs": "set maxWaitingRequests (the platform adds the running batch, which vLLM counts too)",
    "--kv-cache-memory-bytes": "the platform sets it from the fit check (engine.explicitKvCache); off, the KV cache "
    "follows gpuMemoryUtilization",
    "--max-cudagraph-capture-size": "set engine.cudaGraphCaptureMax",
    "--dtype": "set dtype",
    "--quantization": "set quantization",
    "-q": "set quantization",
    "--kv-cache-dtype": "set kvCacheDtype",
    "--shutdown-timeout": "set drain.shutdownTimeoutSeconds",
    "--sse-keep-alive-interval": "the platform derives it from ingress.idleTimeoutSeconds",
    "--api-key": "API keys come from the apiKeys Pulumi secret through a Kubernetes Secret (VLLM_API_KEY), never from args",
    "--hf-token": "the Hugging Face token comes from the hfToken Pulumi secret, mounted as a file",
    "--disable-log-stats": "it also disables the Prometheus metrics that KEDA scales on",
}


def vllm_flag(flag: str) -> str:
    """A flag as vLLM's argument parser reads it: a long flag's underscores are dashes (`--max_model_len`
    is `--max-model-len`), so a refused flag cannot pass in its other spelling."""
    return "--" + flag[2:].replace("_", "-") if flag.startswith("--") else flag


GRAPH_SIZE_FIELDS = ("cudagraph_capture_sizes", "max_cudagraph_capture_size")
"""CompilationConfig's capture-size fields: vLLM 0.33 refuses them beside --max-cudagraph-capture-size
(vllm/engine/arg_utils.py; ../shared/reference/engine-start-facts.md 2)."""


def graph_sizes_flag(args: list[str]) -> str | None:
    """The extraArgs flag that sets CUDA-graph capture sizes: --cudagraph-capture-sizes, or a compilation config
    (`--compilation-config`/`-cc`, JSON or dotted `-cc.cudagraph_capture_sizes=...`) naming a capture-size field."""
    for i, arg in enumerate(args):
        flag, _, inline = arg.partition("=")
        flag = vllm_flag(flag)
        if flag == "--cudagraph-capture-sizes":
            return flag
        base, dot, key = flag.partition(".")
        if base in ("--compilation-config", "-cc"):
            text = key if dot else (inline or (args[i + 1] if i + 1 < len(args) else ""))
            if any(field in text.replace("-", "_") for field in GRAPH_SIZE_FIELDS):
                return flag
    return None


class Architecture(ConfigModel):
    """The model's shape, from its config.json; sizes the KV cache for the fit check."""

    num_layers: int = Field(ge=1, description="num_hidden_layers.")
    num_kv_heads: int = Field(ge=1, description="num_key_value_heads (GQA); equals attention heads without GQA.")
    head_dim: int = Field(ge=1, description="head_dim, or hidden_size / num_attention_heads.")


class Image(ConfigModel):
    """The vLLM container image, pinned."""

    repository: str = Field(default=versions.VLLM_IMAGE_REPOSITORY, description="Image repository.")
    tag: str = Field(default=versions.VLLM_IMAGE_TAG, description="Image tag (never `latest`).")
    digest: ImageDigest | None = Field(default=None, description="Optional sha256 digest; pins the exact bytes (recommended in prod).")

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        last = value.rsplit("/", 1)[-1]
        if "@" in value or ":" in last:
            raise config_error(
                f"repository '{value}' carries a tag or digest; the image reference would become "
                f"'{value}:<tag>', which no registry resolves",
                "put the tag in image.tag and the digest in image.digest, and only the repository here",
            )
        if not _REPOSITORY.match(value):
            raise config_error(f"'{value}' is not an image repository", "write e.g. vllm/vllm-openai or <registry>/<path>")
        return value

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        if value == "latest" or not _TAG.match(value):
            raise config_error(
                f"tag '{value}' is not pinned; `latest` changes under you, and a node pulling a new "
                "vLLM release can change metric names and flags mid-rollout",
                f"pin a release tag such as {versions.VLLM_IMAGE_TAG}, optionally with digest sha256:<64 hex>",
            )
        release = _RELEASE.match(value)
        if release and tuple(int(n) for n in release.groups()) < versions.VLLM_MIN_VERSION:
            oldest = "v" + ".".join(map(str, versions.VLLM_MIN_VERSION))
            raise config_error(
                f"vLLM {value} is older than {oldest}, the oldest release with every flag and metric the platform "
                "uses (--shutdown-timeout, --sse-keep-alive-interval, vllm:kv_cache_usage_perc): the pods would not "
                "start, or autoscaling would read metrics that are never emitted",
                f"use {oldest} or newer (the pinned default is {versions.VLLM_IMAGE_TAG})",
            )
        return value

    @model_validator(mode="after")
    def _release_known(self) -> Image:
        if self.repository == versions.VLLM_IMAGE_REPOSITORY and not _RELEASE.match(self.tag):
            raise config_error(
                f"tag '{self.tag}' of the upstream vLLM image is not a release (vX.Y.Z), so it cannot be checked against "
                "the flags and metrics the platform uses",
                f"pin a release tag such as {versions.VLLM_IMAGE_TAG}",
            )
        return self

    @property
    def reference(self) -> str:
        ref = f"{self.repository}:{self.tag}"
        return f"{ref}@{self.digest}" if self.digest else ref


class Resources(ConfigModel):
    """CPU and memory of the vLLM container. Memory's limit equals its request; CPU's limit is above its
    request (Burstable): vLLM's start is CPU-bound (imports, artifact loading, graph capture), and a
    replica held to its request would start slower than the budget says."""

    cpu: Quantity = Field(description="CPU cores requested, e.g. 4 or 3500m.")
    cpu_limit: Quantity | None = Field(
        default=None,
        description="CPU limit; unset: the host's allocatable CPU shared among the replicas that fit on the pool's smallest "
        "host, never below cpu. Set it equal to cpu for Guaranteed QoS (the start then runs on cpu cores).",
    )
    memory: Quantity = Field(description="Memory, e.g. 32Gi (the weights pass through host memory while loading).")

    @field_validator("cpu", "memory", "cpu_limit")
    @classmethod
    def _positive(cls, value: str | None) -> str | None:
        if value is not None and parse_quantity(value) <= 0:
            raise config_error(
                f"'{value}' is not a positive quantity; vLLM needs CPU and memory to start", "request e.g. cpu 4, memory 32Gi"
            )
        return value

    @model_validator(mode="after")
    def _limit_above_request(self) -> Resources:
        if self.cpu_limit is not None and parse_quantity(self.cpu_limit) < parse_quantity(self.cpu):
            raise config_error(
                f"cpuLimit ({self.cpu_limit}) is below cpu ({self.cpu}); Kubernetes refuses a limit under the request",
                f"set cpuLimit to at least {self.cpu}, or unset it",
            )
        return self


class Engine(ConfigModel):
    """What vLLM does at start, trimmed for a fast scale-up; each trim is a choice with its cost."""

    compile_cache: bool = Field(
        default=True,
        description="Warm the torch.compile cache once per (revision, GPU type, image, tensor parallelism, engine flags) "
        "with a warm-up Job per GPU type of the pool, keep it beside the weights, and copy it into every replica before "
        "vLLM starts (a cached compile is ~4-6 s instead of ~34-80 s). Needs weights from S3 (it is kept in the stack's "
        "bucket); a missing, partial or stale cache falls back to compiling. Cost: one GPU node per GPU type for a few "
        "minutes on every change of the key (docs/scale-up.md). Off: every replica compiles.",
    )
    explicit_kv_cache: bool = Field(
        default=True,
        description="Pass --kv-cache-memory-bytes from the fit check, which skips vLLM's memory profiling (~1.8 s). Cost: "
        "the KV cache is the estimate less a 1 GiB margin rather than what profiling finds, i.e. fewer tokens in cache on "
        "small GPUs (docs/scale-up.md shows it per model). Time-sliced pools always set it (replicas must not profile "
        "each other's memory).",
    )
    cuda_graph_capture_max: int | None = Field(
        default=64,
        ge=1,
        le=1024,
        description="vLLM's --max-cudagraph-capture-size: CUDA graphs captured up to this batch (64: 11 sizes, ~7 s with "
        "a warm cache on an L40S 8B; vLLM's default min(2 x maxNumSeqs, 512) captures ~51 sizes, ~17 s). Cost: decode "
        "steps of larger batches run without CUDA graphs (at most the 5-30 % of --enforce-eager on those steps, EKS user "
        "guide). null: vLLM's default.",
    )


class Replicas(ConfigModel):
    """Replica bounds for autoscaling."""

    min: int = Field(
        ge=0,
        description="Minimum replicas. 0 scales the model to zero when idle: its gateway holds the next request "
        "while a replica starts (a cold start: a GPU node, the image, the weights) and KEDA wakes the model on it.",
    )
    max: int = Field(ge=1, description="Maximum replicas.")

    @model_validator(mode="after")
    def _order(self) -> Replicas:
        if self.min > self.max:
            raise config_error(
                f"min ({self.min}) > max ({self.max}); KEDA's webhook would reject the ScaledObject",
                "raise max or lower min",
            )
        return self


class ScalePolicy(ConfigModel):
    """An HPA scaling direction: stabilization window and step limits."""

    stabilization_window_seconds: int = Field(ge=0, le=3600, description="HPA stabilization window.")
    percent: int | None = Field(default=None, ge=1, description="Most replicas added/removed per period, in percent.")
    pods: int | None = Field(default=None, ge=1, description="Most replicas added/removed per period, in pods.")
    period_seconds: int = Field(ge=1, le=1800, description="Length of the period the limits apply to.")

    @model_validator(mode="after")
    def _limited(self) -> ScalePolicy:
        if self.percent is None and self.pods is None:
            raise config_error(
                "neither percent nor pods is set, so the HPA would get no policy for this direction and move without any step limit",
                "set pods (e.g. 1 for one replica per period) or percent",
            )
        return self


class Fallback(ConfigModel):
    """What KEDA does when the metrics query fails."""

    failure_threshold: int = Field(default=3, ge=1, description="Failed polls before the fallback applies.")
    replicas: int | None = Field(
        default=None,
        ge=1,
        description="Replicas while metrics are missing. Unset: hold the current count (never scale in blind); "
        "set: at least this many (KEDA behavior currentReplicasIfHigher).",
    )


class Schedule(ConfigModel):
    """A replica floor for a recurring window (a KEDA cron trigger): pre-warm a known peak."""

    timezone: str = Field(default="UTC", description="IANA time zone of start and end, e.g. Europe/Berlin.")
    start: str = Field(
        description="Five-field cron expression when the floor begins, e.g. `0 8 * * 1-5` or `0 8 * * mon-fri` "
        "(names in any case, as KEDA reads them)."
    )
    end: str = Field(description="Five-field cron expression when it ends, e.g. `0 18 * * 1-5`.")
    replicas: int = Field(ge=1, le=1000, description="Replicas kept at least while the window is open (KEDA requires 1 or more).")

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise config_error(f"'{value}' is not an IANA time zone", "write e.g. UTC, Europe/Berlin or America/New_York") from None
        return value

    @field_validator("start", "end")
    @classmethod
    def _cron(cls, value: str) -> str:
        try:
            cron.parse(value)
        except cron.CronError as err:
            raise config_error(
                f"'{value}' is not a cron expression KEDA takes: {err}", "write five fields, e.g. `0 8 * * mon-fri`"
            ) from None
        return value

    @model_validator(mode="after")
    def _window(self) -> Schedule:
        if self.start.split() == self.end.split():
            raise config_error("start and end are the same; KEDA rejects such a window", "give the window a different end")
        return self


class Autoscaling(ConfigModel):
    """KEDA triggers on vLLM's own metrics, and HPA behaviour."""

    queue_depth_per_replica: float = Field(
        default=5,
        gt=0,
        description="Acceptable waiting requests per replica: desired = ceil(sum(vllm:num_requests_waiting) / this) (AverageValue).",
    )
    kv_cache_usage_target: Fraction = Field(
        default=0.8,
        description="Target average vllm:kv_cache_usage_perc (0-1): desired = ceil(current * average / this) (Value).",
    )
    ttft_p95_seconds: float | None = Field(
        default=None, gt=0, description="Optional guardrail: scale out when p95 time to first token exceeds this."
    )
    polling_interval_seconds: int = Field(default=15, ge=5, le=300, description="KEDA polling interval.")
    fallback: Fallback = Field(default_factory=Fallback, description="Behaviour when metrics are missing.")
    scale_up: ScalePolicy = Field(
        default_factory=lambda: ScalePolicy(stabilization_window_seconds=0, percent=100, pods=4, period_seconds=15),
        description="Scale-up behaviour: fast.",
    )
    scale_down: ScalePolicy = Field(
        default_factory=lambda: ScalePolicy(stabilization_window_seconds=300, pods=1, period_seconds=120),
        description="Scale-down behaviour: slow, one replica at a time.",
    )
    idle_after: Duration = Field(
        default="30m",
        description="With replicas.min 0: how long without a request (and nothing queued or running) before the "
        "model scales to zero (KEDA cooldownPeriod). At least the model's scale-up budget on a new node.",
    )
    schedules: list[Schedule] = Field(
        default_factory=list,
        description="Replica floors for recurring windows (KEDA cron triggers), e.g. business hours; with "
        "replicas.min 0 the model idles at zero outside them.",
    )


class Drain(ConfigModel):
    """Graceful shutdown: preStop sleep, vLLM drain, and the grace period that must cover both."""

    pre_stop_sleep_seconds: int = Field(
        default=15, ge=0, le=60, description="Sleep before SIGTERM so the load balancer stops sending new requests."
    )
    shutdown_timeout_seconds: int = Field(
        default=45, ge=0, le=600, description="vLLM --shutdown-timeout: how long in-flight requests may finish after SIGTERM."
    )
    termination_grace_period_seconds: int = Field(
        default=75, ge=1, le=3600, description="Pod terminationGracePeriodSeconds; must exceed preStop + shutdown timeout."
    )

    @model_validator(mode="after")
    def _arithmetic(self) -> Drain:
        budget = self.pre_stop_sleep_seconds + self.shutdown_timeout_seconds
        if self.termination_grace_period_seconds <= budget:
            raise config_error(
                f"terminationGracePeriodSeconds ({self.termination_grace_period_seconds}) must exceed "
                f"preStopSleepSeconds + shutdownTimeoutSeconds ({self.pre_stop_sleep_seconds} + "
                f"{self.shutdown_timeout_seconds} = {budget}), or streams are SIGKILLed mid-response",
                f"raise terminationGracePeriodSeconds to at least {budget + 5}",
            )
        return self


class Startup(ConfigModel):
    """Startup probe budget: how long a replica may take to load its model."""

    budget_seconds: int | None = Field(
        default=None,
        ge=60,
        description="Seconds the startupProbe allows; unset: 1.5 x the pessimistic load time (weights at the slowest "
        "host's baseline bandwidth plus a cold engine start, as with no compile cache: config/facts/speed.py), and at least "
        "120 s + 10 s per GiB of checkpoint.",
    )
    period_seconds: int = Field(
        default=1, ge=1, le=60, description="startupProbe period: the server answers, then at most one period passes."
    )


class ModelConfig(ConfigModel):
    """A model served by vLLM with an OpenAI-compatible API."""

    name: K8sName = Field(description="Served model name (API `model` field and the `model_name` metric label); also the namespace.")
    hugging_face_id: HuggingFaceId = Field(description="Hugging Face repository, e.g. meta-llama/Llama-3.1-8B-Instruct.")
    revision: CommitRevision = Field(description="Pinned 40-hex commit of the Hugging Face repository.")
    gated: bool = Field(default=False, description="The repository needs a Hugging Face token (the hfToken secret).")
    parameters_billions: float = Field(gt=0, le=2000, description="Parameter count in billions (sizes the weights).")
    architecture: Architecture = Field(description="Layers and KV heads, for the KV-cache part of the fit check.")
    dtype: Literal["bfloat16", "float16"] = Field(default="bfloat16", description="Activation and (unquantized) weight dtype.")
    quantization: Literal["none", "fp8", "awq", "gptq"] = Field(
        default="none",
        description="Weight quantization. fp8: vLLM quantizes a bf16/fp16 checkpoint online (1 byte/param on the GPU, "
        "the full checkpoint is downloaded); awq, gptq: the repository is a pre-quantized 4-bit checkpoint.",
    )
    kv_cache_dtype: Literal["auto", "fp8"] = Field(default="auto", description="KV-cache dtype; fp8 halves KV memory.")
    image: Image = Field(default_factory=Image, description="vLLM image.")
    weights: ModelWeights = Field(default_factory=ModelWeights, description="Where the weights come from: S3 or Hugging Face.")
    pool: K8sName = Field(description="Name of the gpuPools entry the model runs on.")
    tensor_parallel_size: int = Field(
        default=1, ge=1, le=8, description="GPUs per replica, per node of a multi-node replica (vLLM --tensor-parallel-size)."
    )
    pipeline_parallel_size: int = Field(
        default=1,
        ge=1,
        le=8,
        description="Nodes per replica (vLLM --pipeline-parallel-size, one stage per node: tensor parallel inside a node, "
        "pipeline parallel across nodes). Above 1 a replica is a LeaderWorkerSet group of that many pods, each on a whole "
        "node of an `efa` pool, with tensorParallelSize every GPU of the node.",
    )
    max_model_len: int = Field(ge=256, le=1_048_576, description="Longest sequence (prompt + output) in tokens.")
    gpu_memory_utilization: float = Field(
        default=0.92, gt=0.05, le=0.98, description="Fraction of each GPU's memory vLLM may use (vLLM's default is 0.92)."
    )
    max_num_seqs: int | None = Field(default=None, ge=1, le=4096, description="Concurrent sequences per replica; unset: vLLM's default.")
    max_waiting_requests: int | None = Field(
        default=None,
        ge=1,
        le=65536,
        description="Requests a replica holds waiting beside its running batch before vLLM answers 503 (the platform "
        "passes maxNumSeqs plus this as --max-num-queued-reqs, which counts running and waiting requests); unset: one "
        "batch (maxNumSeqs, else vLLM's default on the pool's GPU), at least 4 x autoscaling.queueDepthPerReplica.",
    )
    resources: Resources = Field(description="CPU and memory per replica.")
    shm_size: Quantity | None = Field(
        default=None, description="/dev/shm size (memory emptyDir); unset: 1Gi, plus 4Gi per extra tensor-parallel GPU."
    )
    replicas: Replicas = Field(description="Replica bounds.")
    placement: Literal["spread", "pack"] = Field(
        default="spread",
        description="Where replicas that share a node (time-slices, MIG slices, a few GPUs of a big node) land, with "
        "replicas.min 2 or more. spread: over at least two zones, so at least two nodes (one node or zone lost leaves "
        "a replica serving; costs a node more at min), packed within each zone; pack: as few nodes as hold them (the "
        "minimum replicas may share one node, so one node loss or spot interruption is an outage; warned).",
    )
    autoscaling: Autoscaling = Field(default_factory=Autoscaling, description="KEDA triggers and HPA behaviour.")
    drain: Drain = Field(default_factory=Drain, description="Graceful shutdown timings.")
    startup: Startup = Field(default_factory=Startup, description="Startup probe budget.")
    engine: Engine = Field(default_factory=Engine, description="Engine start trims: compile cache, KV size, CUDA graphs.")
    slo: Slo | None = Field(default=None, description="Latency objectives; unset: observability.slo.")
    expose: bool = Field(default=True, description="Serve the model's /v1 API through the shared ALB.")
    client_namespaces: list[K8sName] = Field(
        default_factory=list,
        description="Namespaces whose pods may call the model in the cluster (its `url` output: the gateway's Service); "
        "every other pod is refused by the NetworkPolicies. "
        "Only /v1 is served; the platform's Prometheus may always scrape the model.",
    )
    routing: RoutingConfig = Field(default_factory=RoutingConfig, description="How the gateway picks a replica for each request.")
    extra_args: list[str] = Field(default_factory=list, description="Further vLLM flags (not the ones the platform manages).")

    @field_validator("extra_args")
    @classmethod
    def _extra_args(cls, value: list[str], info: ValidationInfo) -> list[str]:
        for arg in value:
            flag = arg.split("=", 1)[0]
            if vllm_flag(flag) in MANAGED_FLAGS:
                raise config_error(f"{flag} may not be in extraArgs: {MANAGED_FLAGS[vllm_flag(flag)]}", f"remove {flag}")
        engine = info.data.get("engine")
        if isinstance(engine, Engine) and engine.cuda_graph_capture_max is not None and (sizes := graph_sizes_flag(value)):
            raise config_error(
                f"{sizes} sets CUDA-graph capture sizes, and so does engine.cudaGraphCaptureMax "
                f"({engine.cuda_graph_capture_max}, as --max-cudagraph-capture-size); vLLM refuses both at once and the "
                "replica would crash-loop",
                f"set engine.cudaGraphCaptureMax: null to pass your own sizes, or remove {sizes}",
            )
        return value

    @property
    def streams_from_s3(self) -> bool:
        """Whether replicas stream the weights from the stack's bucket (the source resolved by the stack)."""
        return self.weights.source == "s3"

    @property
    def multi_node(self) -> bool:
        """Whether a replica spans nodes (a LeaderWorkerSet group instead of a Deployment's pod)."""
        return self.pipeline_parallel_size > 1

    @property
    def compile_cache_used(self) -> bool:
        """Whether replicas start from the compile cache a warm-up Job leaves: it is on, there is something to
        compile (no --enforce-eager), a bucket to keep it in (weights from S3), and a replica the one-pod warm-up
        can stand for (not a multi-node group: each pipeline stage compiles its own layers)."""
        return self.engine.compile_cache and self.streams_from_s3 and "--enforce-eager" not in self.extra_args and not self.multi_node
