"""Add a model from its own config: `make model HF=<org>/<name> [REVISION=<commit>] [POOL=<pool>] [CONFIG=<config.json>]`.

From the model's `config.json` (the file CONFIG names, or read from the Hugging Face Hub at the pinned
revision, with HF_TOKEN for a gated repository) it writes the stack entry: the revision pinned to a commit,
the parameter count (from the config's dimensions: embeddings, attention, the gated MLP or its experts; or
a safetensors index's total size over its dtype's bytes), the architecture fields the fit check reads, and
the cheapest pool and tensor-parallel size of the stack on which the entry passes every check, with a name
within every limit. It prints the entry, its fit, its scale-up budget and its cost; `--write` adds it to the
stack file, keeping the file's comments. What cannot work is refused with the reason and the fix, never a
traceback: a config the fit check cannot size (its missing fields named), a model no pool holds (the
smallest instance type that would, named), a gated repository without a token.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import math
import os
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config import stack_file
from config.checks import registry
from config.derived import capacity, cost, state
from config.facts import catalog
from config.sections.gateway import RELEASE_NAME_MAX
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig

ROOT = Path(__file__).resolve().parent.parent
HUB = "https://huggingface.co"
NAME_MAX = RELEASE_NAME_MAX
"""The longest model name every rule accepts (the gateway's Helm release; KEDA's HPA allows one more)."""
DEFAULT_MAX_MODEL_LEN = 8192
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8_e4m3fn": 1, "int8": 1}
SIZED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
"""What the dense parameter count reads (a mixture of experts adds its expert fields)."""
QKV_BIAS = {"qwen2", "qwen2_moe"}
"""Architectures with a bias on the query, key and value projections (Qwen2's attention)."""


class EntryError(Exception):
    """A model the generator cannot turn into an entry: the message says why and the fix."""


# -- the model's own config -----------------------------------------------------------------------------------
def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a config (multimodal configs nest it under text_config)."""
    nested = config.get("text_config")
    return {**config, **nested} if isinstance(nested, dict) else config


def architecture(config: dict[str, Any]) -> dict[str, int]:
    """numLayers, numKvHeads and headDim, the fields the KV-cache part of the fit check reads."""
    c = _text_config(config)
    missing = [k for k in ("num_hidden_layers", "num_attention_heads", "hidden_size") if not isinstance(c.get(k), int)]
    if missing and not isinstance(c.get("head_dim"), int):
        raise EntryError(
            f"config.json lacks {', '.join(missing)}: the fit check cannot size the KV cache (layers, KV heads, head "
            "size). Fix: pass CONFIG=<a config.json with them>, or write the entry by hand (architecture: {numLayers, "
            "numKvHeads, headDim})"
        )
    heads = c["num_attention_heads"]
    head_dim = c.get("head_dim") or c["hidden_size"] // heads
    return {"numLayers": c["num_hidden_layers"], "numKvHeads": c.get("num_key_value_heads") or heads, "headDim": head_dim}


def experts(config: dict[str, Any]) -> tuple[int, int, int]:
    """(routed experts, each expert's MLP width, the shared expert's width) of a mixture of experts; (0, 0, 0) dense."""
    c = _text_config(config)
    count = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts") or 0
    if not count:
        return 0, 0, 0
    width = c.get("moe_intermediate_size") or c.get("intermediate_size") or 0
    shared = c.get("shared_expert_intermediate_size") or (c.get("n_shared_experts", 0) * width)
    return int(count), int(width), int(shared)


def parameter_count(config: dict[str, Any]) -> int:
    """Parameters from the config's dimensions: token embeddings (and an untied output head), per layer the
    attention projections (and their bias where the architecture has one), a gated MLP (three matrices) or
    its experts, their router and a shared expert, and the layer norms."""
    c = _text_config(config)
    count, width, shared = experts(c)
    needed = [k for k in SIZED if not (k == "intermediate_size" and count)]
    missing = [k for k in needed if not isinstance(c.get(k), int)]
    if missing:
        raise EntryError(
            f"config.json lacks {', '.join(missing)}: the parameter count cannot be read from its dimensions. Fix: "
            "pass INDEX=<model.safetensors.index.json> (its total size gives the count), or set parametersBillions by hand"
        )
    hidden, layers = c["hidden_size"], c["num_hidden_layers"]
    arch = architecture(c)
    q = c["num_attention_heads"] * arch["headDim"]
    kv = arch["numKvHeads"] * arch["headDim"]
    attention = hidden * q + 2 * hidden * kv + q * hidden
    if c.get("model_type") in QKV_BIAS or c.get("attention_bias"):
        attention += q + 2 * kv
    if count:
        mlp = count * 3 * hidden * width + hidden * count  # the experts and their router
        if shared:
            mlp += 3 * hidden * shared + hidden  # the shared expert and its gate
    else:
        mlp = 3 * hidden * c["intermediate_size"]
    per_layer = attention + mlp + 2 * hidden
    embeddings = c["vocab_size"] * hidden
    head = 0 if c.get("tie_word_embeddings", False) else embeddings
    return int(embeddings + head + layers * per_layer + hidden)


def parameters_from_index(index: dict[str, Any], dtype: str) -> int:
    """A safetensors index gives bytes, not parameters: its total size over the checkpoint dtype's bytes."""
    total = (index.get("metadata") or {}).get("total_size")
    if not isinstance(total, int):
        raise EntryError("the safetensors index has no metadata.total_size. Fix: pass the model's model.safetensors.index.json")
    return total // DTYPE_BYTES.get(dtype, 2)


def quantization(config: dict[str, Any]) -> str:
    """The entry's `quantization` from the checkpoint's quantization_config (none without one)."""
    method = str((config.get("quantization_config") or {}).get("quant_method", "none")).lower()
    if method in ("awq", "gptq", "fp8"):
        return method
    if method != "none":
        raise EntryError(
            f"the checkpoint is quantized with {method}, which the fit check cannot size (it knows awq, gptq and fp8). "
            "Fix: choose an awq, gptq, fp8 or unquantized revision of the model"
        )
    return "none"


def dtype(config: dict[str, Any]) -> str:
    value = str(_text_config(config).get("torch_dtype") or config.get("dtype") or "bfloat16")
    return "float16" if value == "float16" else "bfloat16"


def name_for(hugging_face_id: str) -> str:
    """The repository's name as a Kubernetes name within every limit: lower case, dots and underscores as dashes."""
    base = hugging_face_id.rsplit("/", 1)[-1].lower()
    slug = re.sub(r"[^a-z0-9]+", "-", base).strip("-")
    return slug[:NAME_MAX].rstrip("-") or "model"


# -- the Hub (when no CONFIG is given) --------------------------------------------------------------------------
def _get(url: str, token: str | None) -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        body: bytes = response.read()
        return body


def from_hub(hugging_face_id: str, revision: str | None, token: str | None) -> tuple[dict[str, Any], str, bool]:
    """(config.json, the revision's commit, gated) from the Hugging Face Hub."""
    try:
        info = json.loads(_get(f"{HUB}/api/models/{hugging_face_id}/revision/{revision or 'main'}", token))
    except urllib.error.HTTPError as err:
        raise EntryError(
            f"the Hub answered {err.code} for {hugging_face_id} at {revision or 'main'}. Fix: check HF= and REVISION=, "
            "or pass CONFIG=<config.json> and REVISION=<commit> to work offline"
        ) from None
    except urllib.error.URLError as err:
        raise EntryError(f"the Hub cannot be reached ({err.reason}). Fix: pass CONFIG=<config.json> and REVISION=<commit>") from None
    gated = bool(info.get("gated"))
    if gated and not token:
        raise EntryError(
            f"{hugging_face_id} is gated: its files need a Hugging Face token. Fix: set HF_TOKEN to the token the stack's "
            "hfToken secret holds (with access to the repository granted on the Hub)"
        )
    commit = str(info.get("sha") or "")
    try:
        config = json.loads(_get(f"{HUB}/{hugging_face_id}/resolve/{commit}/config.json", token))
    except urllib.error.HTTPError as err:
        raise EntryError(f"config.json of {hugging_face_id}@{commit}: the Hub answered {err.code}. Fix: check HF_TOKEN's access") from None
    return config, commit, gated


# -- the entry and where it fits ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Choice:
    entry: dict[str, Any]
    cfg: StackConfig
    floor_per_month: float
    ceiling_per_month: float


def _resources(pool: Any, tp: int) -> dict[str, str]:
    """CPU and memory for a replica: its GPUs' share of the pool's smallest host that holds it, with room to spare."""
    hosts = [t for t in pool.resolved_instance_types() if t.gpu_count >= tp]
    host = min(hosts, key=lambda t: (t.vcpus, t.memory_gib)) if hosts else None
    if host is None:
        return {"cpu": "2", "memory": "8Gi"}
    slices = max(1, pool.sharing.time_slicing.replicas if pool.sharing.time_slicing else 1)
    share = tp / (host.gpu_count * slices)
    # what the fit check counts as allocatable (config/derived/capacity.py), less a margin for the pool's daemons
    cpu = max(1, math.floor(host.vcpus * capacity.ALLOCATABLE_CPU * share * 0.85))
    memory = max(4, math.floor(host.memory_gib * capacity.ALLOCATABLE_MEMORY * share * 0.85))
    return {"cpu": str(cpu), "memory": f"{memory}Gi"}


def entry(
    hugging_face_id: str,
    revision: str,
    config: dict[str, Any],
    *,
    pool: Any,
    tp: int,
    gated: bool,
    prod: bool,
    parameters: int | None = None,
    max_model_len: int | None = None,
    image: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The stack-file entry (camelCase, as the stack file holds it); `image`: the stack's pinned vLLM image, if any."""
    longest = _text_config(config).get("max_position_embeddings")
    length = max_model_len or min(DEFAULT_MAX_MODEL_LEN, longest if isinstance(longest, int) else DEFAULT_MAX_MODEL_LEN)
    count = parameters if parameters is not None else parameter_count(config)
    found: dict[str, Any] = {
        "name": name_for(hugging_face_id),
        "huggingFaceId": hugging_face_id,
        "revision": revision,
        **({"gated": True} if gated else {}),
        "parametersBillions": round(count / 1e9, 2),
        "architecture": architecture(config),
        **({"quantization": q} if (q := quantization(config)) != "none" else {}),
        **({"dtype": "float16"} if dtype(config) == "float16" else {}),
        **({"image": dict(image)} if image else {}),
        "pool": pool.name,
        **({"tensorParallelSize": tp} if tp > 1 else {}),
        "maxModelLen": length,
        "resources": _resources(pool, tp),
        "replicas": {"min": 2, "max": 4} if prod else {"min": 1, "max": 2},
    }
    return found


def _checked(data: dict[str, Any], name: str, pool: str) -> tuple[StackConfig, list[str]]:
    """The stack with the entry, and the errors every rule of the registry finds about the entry or its pool."""
    cfg = StackConfig.model_validate(data)
    mine = (f"models[{name}]", f"gpuPools[{pool}]")
    return cfg, [str(p) for p in registry.check(cfg) if p.severity == "error" and p.path.startswith(mine)]


def choose(
    data: dict[str, Any],
    hugging_face_id: str,
    revision: str,
    config: dict[str, Any],
    *,
    gated: bool,
    pool_name: str | None = None,
    parameters: int | None = None,
    max_model_len: int | None = None,
) -> Choice:
    """The cheapest (pool, tensor-parallel size) of the stack on which the entry passes every check."""
    prod = data.get("environment") == "prod"
    base = StackConfig.model_validate(data)
    pools = [p for p in base.gpu_pools if pool_name in (None, p.name)]
    if pool_name and not pools:
        raise EntryError(f"POOL={pool_name} is not a pool of the stack (have: {', '.join(p.name for p in base.gpu_pools)})")
    name = name_for(hugging_face_id)
    if any(m.name == name for m in base.models):
        raise EntryError(f"the stack already has a model named {name}. Fix: remove it first, or rename the new entry")
    # the vLLM image the stack's models already pin by digest (prod requires one): the same engine for the new model
    image = next((m.get("image") for m in data.get("models", []) if (m.get("image") or {}).get("digest")), None)
    choices: list[Choice] = []
    refused: list[str] = []
    shaped = functools.partial(
        entry, hugging_face_id, revision, config, gated=gated, prod=prod, parameters=parameters, max_model_len=max_model_len, image=image
    )
    for pool in pools:
        largest = max((t.gpu_count for t in pool.resolved_instance_types()), default=1)
        for tp in (t for t in capacity.TENSOR_PARALLEL_SIZES if t <= largest):
            new = shaped(pool=pool, tp=tp)
            trial = copy.deepcopy(data)
            trial["models"] = [*trial.get("models", []), new]
            cfg, found = _checked(trial, name, pool.name)
            if found:
                refused.append(f"on {pool.name} at tensorParallelSize {tp}, {found[0].split(' Fix:')[0].rstrip('.')}")
                continue
            model = next(m for m in cfg.models if m.name == name)
            priced = cost.model_cost(model, pool, state.of(cfg).model(model).zones)
            hours = catalog.HOURS_PER_MONTH
            choices.append(Choice(new, cfg, priced.floor * hours, priced.ceiling * hours))
            break  # the smallest tensor-parallel size that fits this pool
    if not choices:
        first = shaped(pool=pools[0], tp=1)
        probe = ModelConfig.model_validate(first)
        smallest = capacity.smallest_fitting_instance(probe)
        hint = (
            f"the smallest instance type that holds it is {smallest[0].name} at tensorParallelSize {smallest[1]}: add a "
            "pool of it (or its family) to gpuPools"
            if smallest
            else "no instance type of the catalog holds it"
        )
        raise EntryError(f"{hugging_face_id} fits no pool of the stack: {'; '.join(refused[:4])}. Fix: {hint}")
    return min(choices, key=lambda c: (c.floor_per_month, c.entry["pool"]))


# -- output ---------------------------------------------------------------------------------------------------
def summary(choice: Choice) -> str:
    cfg, name = choice.cfg, choice.entry["name"]
    model = next(m for m in cfg.models if m.name == name)
    pool = cfg.pool(model.pool)
    assert pool is not None
    derived = state.of(cfg).model(model)
    budget = derived.scale_up
    device = derived.device
    weights = capacity.weights_gib(model) / model.tensor_parallel_size
    kv = capacity.kv_cache_gib(model, device) if device else 0.0
    return "\n".join(
        [
            f"fit: {model.tensor_parallel_size} x {device.description if device else '?'} per replica on {pool.name}: "
            f"{weights:.1f} GiB of weights and {kv:.1f} GiB of KV cache per GPU (about "
            f"{kv * model.tensor_parallel_size / max(capacity.kv_gib_per_sequence(model), 1e-9):.0f} full "
            f"{model.max_model_len}-token sequences per replica)",
            f"scale-up budget: {budget.hit} s onto warm headroom, {budget.miss} s onto a new node "
            f"({', '.join(f'{k} {v} s' for k, v in budget.terms.items())})",
            f"cost: ${choice.floor_per_month:,.0f}/month at {model.replicas.min} replica(s), "
            f"${choice.ceiling_per_month:,.0f}/month at {model.replicas.max} (on-demand list prices)",
        ]
    )


_yaml = stack_file.round_trip_yaml


def _item(new: dict[str, Any]) -> Any:
    """The entry as the stack files write one: small mappings inline (`architecture: {numLayers: 32, ...}`)."""
    from ruamel.yaml.comments import CommentedMap

    item = CommentedMap()
    for k, v in new.items():
        if isinstance(v, dict):
            flow = CommentedMap(v)
            flow.fa.set_flow_style()
            item[k] = flow
        else:
            item[k] = v
    return item


def write(path: Path, new: dict[str, Any]) -> None:
    """Add the entry to the stack file's models, keeping the file's comments and layout."""
    from ruamel.yaml.comments import CommentedSeq

    rt = _yaml()
    doc = rt.load(path.read_text())
    config = doc["config"]
    key = "llm-platform:models"
    models = config.get(key)
    if models is None:
        models = CommentedSeq()
        config[key] = models
    models.append(_item(new))
    with path.open("w") as out:
        rt.dump(doc, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("hugging_face_id", metavar="HF", help="the repository, <org>/<name>")
    parser.add_argument("--stack", default="dev", help="the stack file to fit it into: Pulumi.<stack>.yaml (default dev)")
    parser.add_argument("--file", type=Path, help="the stack file (default Pulumi.<stack>.yaml)")
    parser.add_argument("--revision", help="a 40-hex commit (required with --config; online, a branch or tag resolves to one)")
    parser.add_argument("--pool", help="the pool to fit it into (default: the cheapest that holds it)")
    parser.add_argument("--config", type=Path, help="the model's config.json (offline; default: read from the Hub)")
    parser.add_argument("--index", type=Path, help="its model.safetensors.index.json, for a config the count cannot be read from")
    parser.add_argument("--gated", action="store_true", help="the repository is gated (offline; online the Hub says)")
    parser.add_argument("--max-model-len", type=int, help=f"longest sequence (default: the model's, at most {DEFAULT_MAX_MODEL_LEN})")
    parser.add_argument("--write", action="store_true", help="add the entry to the stack file, keeping its comments")
    args = parser.parse_args(argv)
    path = args.file or ROOT / f"Pulumi.{args.stack}.yaml"
    try:
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", args.hugging_face_id):
            raise EntryError(f"HF={args.hugging_face_id} is not a Hugging Face repository. Fix: write it as <org>/<name>")
        if args.config is not None:
            if not (args.revision and re.fullmatch(r"[0-9a-f]{40}", args.revision)):
                raise EntryError(
                    "REVISION=<40-hex commit> is needed with CONFIG: offline there is no Hub to pin the revision. Fix: copy the "
                    "commit from the model's page on the Hub (Files and versions, the commit's full id)"
                )
            try:
                config = json.loads(args.config.read_text())
            except (OSError, json.JSONDecodeError) as err:
                raise EntryError(f"CONFIG={args.config}: {str(err).splitlines()[0]}. Fix: pass the model's config.json") from None
            revision, gated = args.revision, args.gated
        else:
            config, revision, gated = from_hub(args.hugging_face_id, args.revision, os.environ.get("HF_TOKEN"))
        parameters = None
        if args.index is not None:
            parameters = parameters_from_index(json.loads(args.index.read_text()), dtype(config))
        raw = stack_file.read_document(path.read_text(), path.name)
        data, _, _ = stack_file.split(raw, lambda key: isinstance(raw.get(key), dict) and "secure" in raw[key])
        choice = choose(
            data,
            args.hugging_face_id,
            revision,
            config,
            gated=gated,
            pool_name=args.pool,
            parameters=parameters,
            max_model_len=args.max_model_len,
        )
    except EntryError as err:
        print(f"make model: {err}", file=sys.stderr)
        return 2
    rt = _yaml()
    rt.dump([_item(choice.entry)], sys.stdout)
    print(summary(choice))
    if args.write:
        write(path, choice.entry)
        print(f"Added {choice.entry['name']} to {os.path.relpath(path)} (review the diff: replicas, resources, autoscaling).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
