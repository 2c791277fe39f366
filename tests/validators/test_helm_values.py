"""The values-key validator proves itself: the union of a chart's values files, and a misspelled key found."""

from __future__ import annotations

from tests.conftest import shared_path
from tests.validators import helm_values


def test_union_merges_mappings_key_by_key() -> None:
    assert helm_values.union({"a": {"x": 1}, "b": 2}, {"a": {"y": 3}, "c": 4}) == {"a": {"x": 1, "y": 3}, "b": 2, "c": 4}


def test_union_lets_a_placeholder_stand_for_the_mapping_beside_it() -> None:
    # the standalone chart's `router.modelServers:` holds only comments (null); routerlib's has keys
    merged = helm_values.union({"router": {"modelServers": None}}, {"router": {"modelServers": {"type": "vllm"}}})
    assert merged == {"router": {"modelServers": {"type": "vllm"}}}
    assert helm_values.unknown_keys({"router": {"modelServers": {"tpye": "vllm"}}}, merged) == ["router.modelServers.tpye"]
    # alone, a placeholder is free-form, as before
    assert helm_values.unknown_keys({"router": {"modelServers": {"tpye": "vllm"}}}, {"router": {"modelServers": None}}) == []


def test_union_keeps_the_first_file_scalars_and_free_form_when_all_are() -> None:
    assert helm_values.union({"enabled": True}, {"enabled": False}) == {"enabled": True}
    assert helm_values.union({"ports": [{"name": "http"}]}, {"ports": []}) == {"ports": [{"name": "http"}]}
    assert helm_values.union(None, {}) is None


def test_the_router_chart_union_catches_a_misspelled_key() -> None:
    standalone = helm_values.load(shared_path("helm-values", "llm-d-router-standalone-v0.10.0.values.yaml"))
    library = helm_values.load(shared_path("helm-values", "routerlib-v0.10.0.values.yaml"))
    valid = helm_values.union(standalone, {"router": library})
    good = {"router": {"proxy": {"mode": "service", "failOpen": False}, "epp": {"pluginsConfigFile": "x.yaml", "extProcPort": 9002}}}
    assert helm_values.unknown_keys(good, valid) == []
    broken = {"router": {"proxy": {"mode": "service", "failopen": False}, "epp": {"pluginsConfigFile": "x.yaml", "extProcPrt": 9002}}}
    assert helm_values.unknown_keys(broken, valid) == ["router.proxy.failopen", "router.epp.extProcPrt"]
    # neither file alone knows both halves: the proxy is the standalone chart's, the picker the library's
    assert helm_values.unknown_keys(good, standalone) != []
    assert helm_values.unknown_keys(good, {"router": library}) != []
