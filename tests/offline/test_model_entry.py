"""`make model` (offline/model_entry.py, issue 50): an entry from a model's own config.json, pinned, fitted and
priced, on hand-written sample configs (tests/fixtures/hf/, values from the models' published cards); each
entry renders or is refused with a clear error, and `--write` adds it to a stack file keeping its comments."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from config import stack_file
from offline import harness, model_entry
from tests.conftest import DEV, ROOT, fixture_input, stack_data

HF = ROOT / "tests" / "fixtures" / "hf"
STACKS = ROOT / "tests" / "fixtures" / "stacks"
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"
CARDS = {
    # sample, published parameter count (billions), architecture, quantization
    "llama-3.1-8b-instruct": (8.03, {"numLayers": 32, "numKvHeads": 8, "headDim": 128}, "none"),
    "qwen2.5-1.5b-instruct": (1.54, {"numLayers": 28, "numKvHeads": 2, "headDim": 128}, "none"),  # tied embeddings
    "mistral-7b-instruct-v0.3": (7.25, {"numLayers": 32, "numKvHeads": 8, "headDim": 128}, "none"),
    "mixtral-8x7b-instruct": (46.7, {"numLayers": 32, "numKvHeads": 8, "headDim": 128}, "none"),  # 8 experts
    "qwen2.5-7b-instruct-awq": (7.61, {"numLayers": 28, "numKvHeads": 4, "headDim": 128}, "awq"),
}


def _config(sample: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((HF / f"{sample}.json").read_text())
    return loaded


@pytest.mark.parametrize("sample", sorted(CARDS))
def test_the_count_and_architecture_match_the_published_card(sample: str) -> None:
    billions, arch, quantization = CARDS[sample]
    config = _config(sample)
    assert model_entry.parameter_count(config) / 1e9 == pytest.approx(billions, rel=0.005)
    assert model_entry.architecture(config) == arch
    assert model_entry.quantization(config) == quantization


def test_tied_embeddings_count_once_and_an_untied_head_twice() -> None:
    tied = _config("qwen2.5-1.5b-instruct")
    untied = {**tied, "tie_word_embeddings": False}
    assert model_entry.parameter_count(untied) - model_entry.parameter_count(tied) == tied["vocab_size"] * tied["hidden_size"]


def test_a_safetensors_index_gives_bytes_not_parameters() -> None:
    assert model_entry.parameters_from_index({"metadata": {"total_size": 16_060_522_496}}, "bfloat16") == 8_030_261_248
    with pytest.raises(model_entry.EntryError, match=r"no metadata\.total_size"):
        model_entry.parameters_from_index({"weight_map": {}}, "bfloat16")


def _run(capsys: pytest.CaptureFixture[str], sample: str, hf: str, *extra: str, stack: Path | None = None) -> tuple[int, str, str]:
    args = [hf, "--file", str(stack or STACKS / f"{DEV}.yaml"), "--config", str(HF / f"{sample}.json"), "--revision", COMMIT, *extra]
    code = model_entry.main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def _printed_entry(out: str) -> dict[str, Any]:
    (entry,) = YAML(typ="safe").load(out.split("fit:")[0])
    assert isinstance(entry, dict)
    return entry


def test_the_llama_entry_prints_renders_and_fits(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct", "--gated")
    assert (code, err) == (0, "")
    entry = _printed_entry(out)
    assert entry["name"] == "llama-3-1-8b-instruct"
    assert (entry["revision"], entry["gated"], entry["parametersBillions"]) == (COMMIT, True, 8.03)
    assert entry["pool"] == "gpu-l4-a10g"
    assert "tensorParallelSize" not in entry  # one L4 holds it
    assert "fit: 1 x NVIDIA L4 per replica" in out
    assert "scale-up budget:" in out
    assert "cost: $" in out
    # the entry renders: the real program runs with it beside the stack's own model
    models = [*stack_data(DEV)["models"], entry]
    run = harness.run(fixture_input(DEV, overrides={"llm-platform:models": models}))
    deployments = [r.name for r in run.of_type("kubernetes:apps/v1:Deployment")]
    assert "model-llama-3-1-8b-instruct-deployment" in deployments


@pytest.mark.parametrize("sample", ["qwen2.5-1.5b-instruct", "mistral-7b-instruct-v0.3", "qwen2.5-7b-instruct-awq"])
def test_each_sample_that_fits_the_dev_pool_gets_an_entry_that_parses(capsys: pytest.CaptureFixture[str], sample: str) -> None:
    code, out, err = _run(capsys, sample, f"acme/{sample}")
    assert (code, err) == (0, "")
    entry = _printed_entry(out)
    if CARDS[sample][2] != "none":
        assert entry["quantization"] == CARDS[sample][2]
    models = [*stack_data(DEV)["models"], entry]
    harness.run(fixture_input(DEV, overrides={"llm-platform:models": models}))


def test_a_model_no_pool_holds_is_refused_with_the_smallest_type_that_would(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "mixtral-8x7b-instruct", "mistralai/Mixtral-8x7B-Instruct-v0.1")
    assert (code, out) == (2, "")
    assert "fits no pool of the stack: on gpu-l4-a10g at tensorParallelSize 1" in err
    assert "Fix: the smallest instance type that holds it is g6e.12xlarge at tensorParallelSize 4" in err
    assert "Traceback" not in err


def test_on_the_prod_fixture_the_moe_model_takes_the_h100_pool_at_the_smallest_tensor_parallel_size(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys, "mixtral-8x7b-instruct", "mistralai/Mixtral-8x7B-Instruct-v0.1", stack=STACKS / "full-prod.yaml")
    assert (code, err) == (0, "")
    entry = _printed_entry(out)
    assert entry["replicas"] == {"min": 2, "max": 4}  # prod: a replica survives a node loss
    assert entry["tensorParallelSize"] in (2, 4)
    assert entry["pool"] in {"gpu-h100", "gpu-l40s-shared", "gpu-a100-mig"}


def test_a_config_the_fit_check_cannot_size_is_refused_naming_the_missing_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "state-space-unsized", "state-spaces/mamba-2.8b")
    assert (code, out) == (2, "")
    assert "config.json lacks num_attention_heads, intermediate_size" in err
    assert "Fix:" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["not-a-repo", "--config", "x.json", "--revision", COMMIT], "is not a Hugging Face repository"),
        (["org/model", "--config", str(HF / "llama-3.1-8b-instruct.json")], "REVISION=<40-hex commit> is needed with CONFIG"),
        (["org/model", "--config", str(HF / "llama-3.1-8b-instruct.json"), "--revision", "main"], "REVISION=<40-hex commit>"),
        (["org/model", "--config", "/nonexistent/config.json", "--revision", COMMIT], "CONFIG=/nonexistent/config.json"),
        (["org/model", "--config", str(HF / "llama-3.1-8b-instruct.json"), "--revision", COMMIT, "--pool", "nope"], "POOL=nope"),
    ],
)
def test_bad_arguments_get_a_reason_and_a_fix(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert model_entry.main([*args, "--file", str(STACKS / f"{DEV}.yaml")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_a_gated_repository_without_a_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Online, the Hub's model API says the repository is gated: without HF_TOKEN nothing is fetched."""
    asked: list[str] = []

    def hub(url: str, token: str | None) -> bytes:
        asked.append(url)
        return json.dumps({"sha": COMMIT, "gated": "manual"}).encode()

    monkeypatch.setattr(model_entry, "_get", hub)
    with pytest.raises(model_entry.EntryError, match=r"is gated: its files need a Hugging Face token\. Fix: set HF_TOKEN"):
        model_entry.from_hub("meta-llama/Llama-3.1-8B-Instruct", None, None)
    assert asked == ["https://huggingface.co/api/models/meta-llama/Llama-3.1-8B-Instruct/revision/main"]


def test_online_the_revision_is_pinned_to_the_commit_the_hub_names(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config("llama-3.1-8b-instruct")

    def hub(url: str, token: str | None) -> bytes:
        assert token == "hf_token"
        if "/api/models/" in url:
            return json.dumps({"sha": COMMIT, "gated": False}).encode()
        assert url == f"https://huggingface.co/acme/model/resolve/{COMMIT}/config.json"
        return json.dumps(config).encode()

    monkeypatch.setattr(model_entry, "_get", hub)
    assert model_entry.from_hub("acme/model", "main", "hf_token") == (config, COMMIT, False)


def test_write_adds_the_entry_to_a_copy_of_a_stack_file_keeping_its_comments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = tmp_path / "Pulumi.dev.yaml"
    shutil.copy(ROOT / "Pulumi.dev.yaml", stack)
    before = stack.read_text()
    code, _, err = _run(capsys, "qwen2.5-1.5b-instruct", "Qwen/Qwen2.5-1.5B-Instruct", "--write", stack=stack)
    assert (code, err) == (0, "")
    after = stack.read_text()
    comments = [line.strip() for line in before.splitlines() if line.strip().startswith("#")]
    assert comments
    assert all(c in after for c in comments), "a comment of the stack file was lost"
    # every line of the original is still there, in order: the entry was added, nothing rewritten
    remaining = iter(after.splitlines())
    assert all(any(line == other for other in remaining) for line in before.splitlines())
    raw = stack_file.read_document(after, stack.name)
    data, _, _ = stack_file.split(raw, lambda key: isinstance(raw.get(key), dict) and "secure" in raw[key])
    assert [m["name"] for m in data["models"]][-1] == "qwen2-5-1-5b-instruct"
    assert "architecture: {numLayers: 28, numKvHeads: 2, headDim: 128}" in after
