"""The derived state (config/derived/state.py) is the one home of every derived fact.

Two kinds of proof: no module outside config/derived/ computes one of its facts itself (an AST scan
of the code, shown catching each pattern on a small snippet), and the readers agree with it on
every fixture: the rendered NodePool limits, the exported scale-up budgets, preflight's quota
inputs (with the warm headroom's nodes), and the gpuLimit rule's threshold.
"""

from __future__ import annotations

import ast
import gc
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.checks import account, preflight
from config.derived import state
from config.facts.conventions import GPU_RESOURCE
from config.sections.stack import StackConfig
from tests.conftest import DEV, FIXTURES, PROD, ROOT, fixture_run, parse, problems_after, stack_data

CODE = ("config", "builders", "components", "offline", "planner", "policy", "__main__.py")
ACCOUNT = ROOT / "offline" / "account.yaml"
HOME = ROOT / "config" / "derived"
"""Where derived facts may be computed: the derived layer itself (state.py and the capacity math it uses)."""

# module -> functions whose result is a fact of the derived state
DERIVING = {
    "config.derived.scaleup": {"budget"},
    "config.derived.capacity": {
        "nodes_for",
        "placed_nodes",
        "placed_surge_nodes",
        "smallest_device",
        "packing_hosts",
        "replicas_per_node",
        "rollout_surge_nodes",
    },
    "config.derived.headroom": {"placeholders", "nodes"},
}


def _module_aliases(tree: ast.AST) -> tuple[dict[str, str], dict[str, str]]:
    """Local names bound to the deriving modules, and to their functions."""
    modules: dict[str, str] = {}
    functions: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in DERIVING:
                    modules[alias.asname or alias.name] = full
                elif node.module in DERIVING and alias.name in DERIVING[node.module]:
                    functions[alias.asname or alias.name] = full
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in DERIVING:
                    modules[alias.asname or alias.name] = alias.name
    return modules, functions


def _is_replicas_min(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute) and node.attr == "min" and isinstance(node.value, ast.Attribute) and node.value.attr == "replicas"
    )


def _asks_for_zero(node: ast.AST) -> bool:
    """`replicas.min == 0`, `!= 0`, `> 0`, `0 < ...`, `< 1`, `>= 1`, `not ...`: each asks whether the model scales to zero."""
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.Not) and _is_replicas_min(node.operand)
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return False
    (op,) = node.ops
    left, right = node.left, node.comparators[0]
    if _is_replicas_min(right):
        left, right = right, left
        op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(), ast.GtE: ast.LtE()}.get(type(op), op)
    if not _is_replicas_min(left) or not isinstance(right, ast.Constant):
        return False
    return right.value == 0 or (right.value == 1 and isinstance(op, (ast.Lt, ast.GtE)))


def recomputations(source: str) -> list[str]:
    """Each place in the source that computes a derived fact instead of asking the derived state."""
    tree = ast.parse(source)
    modules, functions = _module_aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
                if f.attr in DERIVING[modules[f.value.id]]:
                    found.append(f"{node.lineno}: {modules[f.value.id]}.{f.attr}()")
            elif isinstance(f, ast.Name) and f.id in functions:
                found.append(f"{node.lineno}: {functions[f.id]}()")
        elif _asks_for_zero(node):
            found.append(f"{node.lineno}: replicas.min compared with 0 (ModelState.scales_to_zero)")
        elif isinstance(node, ast.Attribute) and node.attr == "default_ami_family" and isinstance(node.ctx, ast.Load):
            found.append(f"{node.lineno}: default_ami_family read (PoolState.ami_family)")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "scales_to_zero"
            and isinstance(node.value, ast.Name)
            and node.value.id == "cfg"
        ):
            found.append(f"{node.lineno}: {node.value.id}.scales_to_zero (StackState.scales_to_zero)")
    return found


def _code_files() -> list[Path]:
    files: list[Path] = []
    for entry in CODE:
        path = ROOT / entry
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [f for f in files if HOME not in f.parents]


def test_no_module_outside_the_derived_layer_recomputes_a_derived_fact() -> None:
    files = _code_files()
    assert len(files) > 80
    found = {str(f.relative_to(ROOT)): hits for f in files if (hits := recomputations(f.read_text()))}
    assert found == {}, "ask config.derived.state.of(cfg) instead"


@pytest.mark.parametrize(
    ("snippet", "hit"),
    [
        ("from config.derived import scaleup\nscaleup.budget(m, scrape_interval='15s')", "config.derived.scaleup.budget()"),
        ("from config.derived import capacity as c\nc.nodes_for(m, p, t, 3)", "config.derived.capacity.nodes_for()"),
        ("from config.derived.capacity import packing_hosts\npacking_hosts(m, p)", "config.derived.capacity.packing_hosts()"),
        ("import config.derived.headroom\n", None),
        ("from config.derived import headroom\nheadroom.placeholders(p, ms)", "config.derived.headroom.placeholders()"),
        ("if model.replicas.min == 0:\n    pass", "replicas.min compared with 0"),
        ("ok = 0 < m.replicas.min", "replicas.min compared with 0"),
        ("idle = m.replicas.min < 1", "replicas.min compared with 0"),
        ("warm = 1 <= m.replicas.min", "replicas.min compared with 0"),
        ("if not model.replicas.min:\n    pass", "replicas.min compared with 0"),
        ("family = pool.ami_family or cfg.karpenter.default_ami_family", "default_ami_family read"),
        ("if cfg.scales_to_zero:\n    pass", "cfg.scales_to_zero"),
        # what is allowed: asking the state, another module's function of the same name, min compared with 2
        ("from config.derived import state\nstate.of(cfg).model(m.name).scale_up", None),
        ("from builders import headroom\nheadroom.placeholders(pool)", None),
        ("if m.replicas.min < 2:\n    pass", None),
    ],
)
def test_the_scan_catches_each_way_of_recomputing(snippet: str, hit: str | None) -> None:
    found = recomputations(snippet)
    if hit is None:
        assert found == []
    else:
        assert len(found) == 1, found
        assert hit in found[0]


def test_the_state_is_computed_once_per_config_object() -> None:
    cfg = parse(stack_data(PROD))
    first = state.of(cfg)
    assert state.of(cfg) is first
    copy = cfg.model_copy(update={"gpu_pools": [p.model_copy(update={"headroom": 0}) for p in cfg.gpu_pools]})
    assert state.of(copy) is not first
    assert state.of(copy).pool("gpu-l4-a10g").warm is None
    assert first.pool("gpu-l4-a10g").warm is not None


def _registered(result: Any, kind: str) -> list[dict[str, Any]]:
    return [r.inputs for r in result.registrations if r.type.startswith("kubernetes:") and r.inputs.get("kind") == kind]


def _config(stack: str) -> StackConfig:
    return parse(stack_data(stack))


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_rendered_nodepools_carry_the_states_limits(stack: str) -> None:
    run = fixture_run(stack)
    derived = state.of(_config(stack))
    limits = {p["metadata"]["name"]: int(p["spec"]["limits"][GPU_RESOURCE]) for p in _registered(run, "NodePool")}
    assert limits == {name: pool.nodepool_limit for name, pool in derived.pools.items()}


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_exported_budgets_are_the_states(stack: str) -> None:
    run = fixture_run(stack)
    derived = state.of(_config(stack))
    exported = {name: m["scaleUpSeconds"] for name, m in run.outputs["models"].items()}
    assert exported == {name: m.scale_up.as_output() for name, m in derived.models.items()}


def test_preflight_counts_the_warm_headroom_in_the_quota_minimum() -> None:
    cfg = parse(stack_data(PROD))
    pool = state.of(cfg).pool("gpu-l4-a10g")
    assert pool.warm is not None
    assert pool.warm.nodes > 0
    models = sum(m.vcpus_at_min for m in state.of(cfg).models.values() if m.pool == "gpu-l4-a10g")
    assert pool.vcpus_at_min == models + pool.warm.vcpus
    raw = yaml.safe_load(ACCOUNT.read_text())
    checks = preflight.run(cfg, account.in_region(account.parse(raw, "default"), cfg.region), authoritative=False)
    g = next(c for c in checks if c.name == "quota" and c.inputs.get("quotaCodes") == ["L-DB2E81BA", "L-3819A6DF"])
    expected = sum(p.vcpus_at_min for p in state.of(cfg).pools.values() if "G" in p.instance_classes)
    assert g.inputs["vcpusAtMin"] == expected
    # Quotas that hold the models' minimum but not the headroom's node fail: the account cannot hold the pool.
    short = expected - pool.warm.vcpus
    quotas = {"L-DB2E81BA": short, "L-417A185B": 4096, "L-3819A6DF": 0, "L-7212CCBC": 4096, "L-1216C47A": 4096}
    short_answers = account.in_region(account.parse({**raw, "quotas": quotas}, "short"), cfg.region)
    failed = [c.inputs.get("quotaCodes") for c in preflight.run(cfg, short_answers, authoritative=False) if c.result == "failed"]
    assert failed == [["L-DB2E81BA", "L-3819A6DF"]]


def test_the_gpu_limit_rule_reads_the_states_peak() -> None:
    cfg = parse(stack_data(PROD))
    pool = state.of(cfg).pool("gpu-l4-a10g")

    def limit(value: int) -> Any:
        return lambda d: next(p for p in d["gpuPools"] if p["name"] == "gpu-l4-a10g").update(gpuLimit=value)

    assert not [p for p in problems_after(limit(pool.gpus_at_peak), PROD) if ".gpuLimit" in p]
    below = [p for p in problems_after(limit(pool.gpus_at_peak - 1), PROD) if ".gpuLimit" in p]
    assert len(below) == 1
    assert f"at least {pool.gpus_at_peak}" in below[0]


def _with_l40s_limit(cfg: StackConfig, limit: int) -> StackConfig:
    pools = [p.model_copy(update={"gpu_limit": limit}) if p.name == "gpu-l40s-shared" else p for p in cfg.gpu_pools]
    return cfg.model_copy(update={"gpu_pools": pools})


def test_a_copy_derives_its_own_state_and_a_freed_config_leaves_none_behind() -> None:
    original = parse(stack_data(PROD))
    state.of(original)
    copy = _with_l40s_limit(original, 20)
    key = id(original)
    assert key in state._CACHE
    del original
    gc.collect()
    assert key not in state._CACHE  # a later config at this address cannot be handed the freed one's state
    again = _with_l40s_limit(copy, 30)
    assert state.of(again).pool("gpu-l40s-shared").nodepool_limit == 60  # two time-slices per GPU
    assert state.of(copy).pool("gpu-l40s-shared").nodepool_limit == 40


def test_models_of_one_name_keep_their_own_facts() -> None:
    # a parsed stack may repeat a name (the rules report it); each model's facts stay its own
    data = stack_data(DEV)
    twin = {**data["models"][0], "replicas": {"min": 3, "max": 5}}
    data["models"].append(twin)
    cfg = StackConfig.model_validate(data)  # parsed, not yet checked
    derived = state.of(cfg)
    first, second = (derived.model(m) for m in cfg.models)
    assert (first.nodes_at_min, first.nodes_at_max, second.nodes_at_min, second.nodes_at_max) == (1, 3, 3, 5)
    assert (derived.pool("gpu-l4-a10g").gpus_at_min, derived.pool("gpu-l4-a10g").gpus_at_peak) == (4, 10)
    limit = [p for p in problems_after(lambda d: d["models"].append(twin)) if ".gpuLimit" in p]
    assert len(limit) == 1
    assert "at least 6" in limit[0]


def test_the_quota_minimum_counts_the_cheapest_headroom_node_and_the_limit_the_largest() -> None:
    data = stack_data(DEV)
    data["gpuPools"][0].update(instanceTypes=["g6.xlarge", "g6.2xlarge", "g6.12xlarge", "g5.xlarge"], headroom=1, gpuLimit=16)
    pool = state.of(parse(data)).pool("gpu-l4-a10g")
    assert pool.warm is not None
    assert (pool.warm.host.name, pool.warm.gpus) == ("g6.12xlarge", 4)  # gpuLimit's worst case: one node of four GPUs
    assert pool.warm.vcpus == 4  # Karpenter's pick for one 1-GPU placeholder: a 4-vCPU node
    assert pool.vcpus_at_min == 8


@pytest.mark.parametrize(
    ("stack", "pool", "limit", "at_min", "at_peak"),
    [
        ("minimal-dev", "gpu-l4-a10g", 4, 1, 4),
        ("full-prod", "gpu-l4-a10g", 16, 3, 14),
        ("full-prod", "gpu-l40s-shared", 8, 2, 4),  # the 3B model's two replicas spread: two nodes at min
        ("full-prod", "gpu-a100-mig", 8, 8, 8),
        ("existing-vpc-irsa-bottlerocket", "gpu-l4", 5, 1, 5),
    ],
)
def test_pool_facts_on_the_fixtures(stack: str, pool: str, limit: int, at_min: int, at_peak: int) -> None:
    # absolute figures, so a wrong state cannot pass by being read consistently everywhere
    facts = state.of(parse(stack_data(stack))).pool(pool)
    assert (facts.nodepool_limit, facts.gpus_at_min, facts.gpus_at_peak) == (limit, at_min, at_peak)


@pytest.mark.parametrize("stack", FIXTURES)
def test_a_spread_model_needs_two_nodes_at_min_and_its_pool_counts_them(stack: str) -> None:
    cfg = parse(stack_data(stack))
    derived = state.of(cfg)
    for m in cfg.models:
        s = derived.model(m)
        if s.spread:
            assert s.nodes_at_min >= 2
            assert s.survives_node_loss
            assert s.gpus_at_min == s.nodes_at_min * s.hosts[0].gpu_count
        pool = derived.pool(m.pool)
        assert pool.gpus_at_min >= s.gpus_at_min


def test_spread_and_packed_node_counts_of_the_prod_models() -> None:
    # absolute: the 3B model spreads (two g6e.xlarge at min; six replicas over three zones, two per node, three
    # nodes; the surge's seventh a fourth); packed, the 70B and MIG models sit on one node at min (warned)
    data = stack_data(PROD)
    derived = state.of(parse(data))
    facts = {n: (m.spread, m.zones, m.nodes_at_min, m.nodes_at_max, m.surge_nodes) for n, m in derived.models.items()}
    assert facts == {
        "llama-3-1-8b": (False, 3, 2, 12, 1),
        "llama-3-3-70b": (False, 3, 1, 2, 1),
        "qwen-2-5-7b": (False, 3, 1, 1, 0),
        "llama-3-2-3b": (True, 3, 2, 3, 1),
    }
    for m in data["models"]:
        m.pop("placement", None)
        if m["name"] == "qwen-2-5-7b":
            next(p for p in data["gpuPools"] if p["name"] == m["pool"])["gpuLimit"] = 24
    spread = state.of(parse(data))
    # spread, the 70B model's four replicas over three zones need three p5 (2+1+1), the MIG model's eight three p4d
    assert {n: (m.nodes_at_min, m.nodes_at_max, m.surge_nodes) for n, m in spread.models.items() if m.spread} == {
        "llama-3-3-70b": (2, 3, 0),
        "qwen-2-5-7b": (2, 3, 0),
        "llama-3-2-3b": (2, 3, 1),
    }
    assert (spread.pool("gpu-h100").gpus_at_peak, spread.pool("gpu-a100-mig").gpus_at_peak) == (24, 24)


def test_the_prod_fixtures_g_quota_minimum() -> None:
    cfg = parse(stack_data(PROD))
    raw = yaml.safe_load(ACCOUNT.read_text())
    checks = preflight.run(cfg, account.in_region(account.parse(raw, "default"), cfg.region), authoritative=False)
    minimums = {tuple(c.inputs["quotaCodes"]): c.inputs["vcpusAtMin"] for c in checks if "quotaCodes" in c.inputs}
    # 8 vCPUs of the L4/A10G model's two nodes, 4 of its headroom node (12 before the headroom counted), 8 of the
    # 3B model's two L40S nodes (spread over two zones; 4 when it packed both replicas onto one)
    assert minimums == {("L-DB2E81BA", "L-3819A6DF"): 20, ("L-417A185B",): 288}


def test_a_pickled_config_derives_anew_on_the_other_side() -> None:
    # the planner hands the config to a second process
    cfg = parse(stack_data(PROD))
    first = state.of(cfg)
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg == parse(stack_data(PROD))  # asking for the state leaves the config as it was
    assert state.of(back) is not first
    assert state.of(back).pool("gpu-l4-a10g") == first.pool("gpu-l4-a10g")
