"""The SGLang plugin on CPU with the real sglang 0.5.16: discovery, routing, the environment switch,
ServerArgs validation with our drafter, and every startup error of the worker.

Hooks patch SGLang process-wide, so the host runs in a fresh interpreter
(``tests/scenarios/plugin_host.py``): one per plugin environment, running every check of that
environment; each test asserts one outcome.
"""

import os
from importlib.metadata import entry_points

import pytest
import scenarios
import torch
from cpu_server import cpu_environment
from drafter_edits import copy_drafter, edit_weights
from transformers import Qwen2Config

pytest.importorskip("sglang", reason="needs the sglang extra installed")

# Startup error case -> what its message names (besides "expected").
STARTUP_ERRORS = {
    "missing": "--speculative-draft-model-path is ",
    "architecture": "architectures",
    "hidden size": "hidden_size is 64",
    "vocab": "vocab_size is 96",
    "layer ids": "num_target_layers is 12",
    "mask token": "mask_token_id is 64",
    "block size": "block_size is 1",
    "block mismatch": "--speculative-num-draft-tokens is 8",
    "fc shape": "fc.weight shape is [32, 96]",
    "unreadable config": "config.json",
}


def startup_error_cases(drafter: str, root: str) -> dict[str, tuple[str, dict]]:
    """Startup error case -> (a drafter directory, extra ServerArgs) that is wrong in exactly that way."""
    edited = {
        "architecture": {"architectures": ["Qwen3ForCausalLM"]},
        "hidden size": {"hidden_size": 64, "head_dim": 16},
        "vocab": {"vocab_size": 96},
        "layer ids": {"num_target_layers": 12, "dflash_config": {"target_layer_ids": [1, 9]}},
        "mask token": {"dflash_config": {"mask_token_id": 64}},
        "block size": {"block_size": 1},
    }
    cases = {
        name: (copy_drafter(drafter, os.path.join(root, name), **changes), {})
        for name, changes in edited.items()
    }
    cases["missing"] = (os.path.join(root, "nope"), {})
    cases["block mismatch"] = (drafter, {"speculative_num_draft_tokens": 8})
    fc_shape = edit_weights(
        copy_drafter(drafter, os.path.join(root, "fc")),
        lambda state: state.update({"fc.weight": torch.zeros(32, 96)}),
    )
    cases["fc shape"] = (fc_shape, {})
    unreadable = copy_drafter(drafter, os.path.join(root, "unreadable"))
    with open(os.path.join(unreadable, "config.json"), "w") as f:
        f.write("{")
    cases["unreadable config"] = (unreadable, {})
    return cases


def qwen2_config(root: str, architecture: str) -> str:
    """A Qwen2 target config the drafter fits, under ``architecture``: its directory."""
    out = os.path.join(root, architecture)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        architectures=[architecture],
    )
    config.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def host(qwen3_pair, tmp_path_factory) -> dict:
    """Every check with our plugin selected (the default), in one host."""
    target, drafter = qwen3_pair
    root = str(tmp_path_factory.mktemp("plugin"))
    checks = {
        "workers": ("speculative_workers", {"target": target, "draft": drafter}),
        "requests": ("request_verdicts", {}),
        "few-row linears": ("few_row_linears", {}),
        "split-KV hook": ("splitkv_hook", {}),
    }
    for architecture in ("Qwen2ForCausalLM", "LlamaForCausalLM"):
        target_config = qwen2_config(root, architecture)
        checks[architecture] = ("capture_layers", {"target": target_config, "draft": drafter})
    for name, (draft, extra) in startup_error_cases(drafter, root).items():
        checks[f"startup: {name}"] = ("server_args", {"target": target, "draft": draft, "extra": extra})
    return scenarios.plugin_host(checks)


@pytest.fixture(scope="module")
def cpu_engine_host() -> dict:
    """The host's linears with SGLang's CPU engine selected, as the CPU servers of the tests run it."""
    return scenarios.plugin_host(
        {"few-row linears": ("few_row_linears", {}), "split-KV hook": ("splitkv_hook", {})},
        env=cpu_environment(),
    )


@pytest.fixture(scope="module")
def builtin_host(qwen3_pair) -> dict:
    """The worker choice with SGLang's built-in DFLASH selected by the environment switch."""
    target, drafter = qwen3_pair
    return scenarios.plugin_host(
        {"workers": ("speculative_workers", {"target": target, "draft": drafter})},
        env={"SGLANG_DFLASH_IMPL": "builtin"},
    )


def test_entry_point_is_declared():
    eps = {ep.name: ep.value for ep in entry_points(group="sglang.srt.plugins")}
    assert eps.get("dflash") == "sglang_dflash.serving.plugin:register"


def test_plugin_routes_dflash_to_our_worker_and_model(host):
    workers = host["workers"]
    assert isinstance(workers, dict), workers
    assert workers["dflash"] == "sglang_dflash.serving.worker.DFlashWorker"
    assert workers["model"] == "sglang_dflash.serving.model"


def test_other_speculative_algorithms_keep_their_workers(host):
    assert host["workers"]["eagle"] == "EAGLEWorkerV2"


def test_dflash_server_args_take_the_drafters_block_size_one_step_and_top_1(host):
    workers = host["workers"]
    assert (workers["block"], workers["steps"], workers["topk"]) == (4, 1, 1)


def test_our_dflash_admits_prefills_without_waiting_for_free_slots_unless_asked(host, builtin_host):
    """The host holds a DFLASH server's new prefills until 3 of 16 running slots are free: 1-2 of 16
    clients waited a whole generation for their first token. Ours admits at once; a user's
    --min-free-slots-delay stays; the built-in keeps the host's default."""
    assert host["workers"]["held_until_free"] is None
    assert host["workers"]["held_until_free_when_set"] == 3
    assert builtin_host["workers"]["held_until_free"] == 3


def test_the_scheduler_takes_logprobs_grammars_hidden_states_and_penalties(host):
    verdicts = host["requests"]
    served = ("logprobs", "grammar", "hidden states", "penalty")
    assert [verdicts[name] for name in served] == [None] * len(served)
    assert "sglang-dflash: custom_logit_processor is" in verdicts["custom processor"]


def test_cpu_engine_linears_of_2_to_16_rows_take_the_few_row_product_in_a_decode_step(cpu_engine_host):
    # 1 and 17 rows, and 3 rows outside the decode step's context, keep the host's product.
    assert cpu_engine_host["few-row linears"] == {"linear": [3, 16], "lm_head": [3, 16]}


def test_gpu_processes_keep_the_hosts_linears_unhooked(host):
    assert host["few-row linears"] == {"linear": [], "lm_head": []}


def test_the_split_kv_switch_is_hooked_on_gpus_only(host, cpu_engine_host):
    assert host["split-KV hook"] is True
    assert cpu_engine_host["split-KV hook"] is False


@pytest.mark.parametrize(
    "env, dflash, draft_worker, expected",
    [
        ("1", True, False, True),  # our target's verify
        ("1", True, True, True),  # our drafter's bidirectional pass
        ("1", False, False, False),  # other algorithms keep the host's kernels
        ("0", True, False, False),
        (None, False, False, False),  # other algorithms keep them by default too
        (None, True, False, True),  # on by default (measured on an H200, 2026-12-04)
    ],
)
def test_the_split_kv_switch_puts_our_block_attention_in_the_backends_verify_path(
    monkeypatch, env, dflash, draft_worker, expected
):
    from types import SimpleNamespace

    from sglang_dflash.kernels.block_attention import block_attention_splitkv
    from sglang_dflash.serving import plugin

    if env is None:
        monkeypatch.delenv(plugin.SPLITKV_ENV, raising=False)
    else:
        monkeypatch.setenv(plugin.SPLITKV_ENV, env)
    runner = SimpleNamespace(
        spec_algorithm=SimpleNamespace(is_dflash=lambda: dflash), is_draft_worker=draft_worker
    )
    backend = SimpleNamespace()
    hosts_kernel = object()

    def host_init(self, model_runner, skip_prefill=False):
        # as the host has it: SGLang's causal split-KV verify kernel, enabled on AMD gfx95 only
        self.use_verify_splitkv, self.verify_splitkv_fwd = False, hosts_kernel
        self.skip_prefill = skip_prefill

    plugin._triton_backend_init(host_init, backend, runner, skip_prefill=True)
    assert backend.use_verify_splitkv is expected and backend.skip_prefill is True
    if expected:  # wrapped by torch.compiler.disable, as the host wraps its own
        assert getattr(backend.verify_splitkv_fwd, "__wrapped__", None) is block_attention_splitkv
    else:
        assert backend.verify_splitkv_fwd is hosts_kernel


@pytest.mark.parametrize(
    "tree_env, draft_worker, armed",
    [("/drafter/verify-trees/tree-15.json", False, True), ("auto", False, False), (None, False, False),
     ("/drafter/verify-trees/tree-15.json", True, False)],
    ids=["named-tree", "auto", "unset", "draft-runner"],
)  # fmt: skip
def test_a_named_verify_tree_arms_the_block_mask_before_the_targets_graphs(
    monkeypatch, tree_env, draft_worker, armed
):
    """Armed at the target's backend start (before SGLang captures its verify graphs), at the block's
    width; the drafter's backend and servers verifying the chain leave the kernel as it was."""
    from types import SimpleNamespace

    from sglang_dflash.kernels.block_attention import BlockMasks
    from sglang_dflash.serving import plugin
    from sglang_dflash.serving.tree_verify import VERIFY_TREE_ENV

    monkeypatch.setattr(BlockMasks, "held", {})
    monkeypatch.delenv(plugin.SPLITKV_ENV, raising=False)
    if tree_env is None:
        monkeypatch.delenv(VERIFY_TREE_ENV, raising=False)
    else:
        monkeypatch.setenv(VERIFY_TREE_ENV, tree_env)
    runner = SimpleNamespace(
        spec_algorithm=SimpleNamespace(is_dflash=lambda: True),
        is_draft_worker=draft_worker,
        device="cpu",
        server_args=SimpleNamespace(speculative_num_draft_tokens=16),
    )
    plugin._triton_backend_init(lambda self, model_runner: None, SimpleNamespace(), runner)
    mask = BlockMasks.armed("cpu", 16)
    assert (mask is not None) is armed
    if armed:
        assert torch.equal(mask, torch.ones(16, 16, dtype=torch.int8).tril())  # causal until a tree step


def test_a_bad_split_kv_value_is_refused(monkeypatch):
    from sglang_dflash.serving import plugin

    monkeypatch.setenv(plugin.SPLITKV_ENV, "yes")
    expected = "SGLANG_DFLASH_SPLITKV is 'yes'; expected '1' \\(default\\) or '0'"
    with pytest.raises(ValueError, match=expected):
        plugin.splitkv_setting()


def test_environment_switch_selects_the_builtin(builtin_host):
    workers = builtin_host["workers"]
    assert isinstance(workers, dict), workers
    assert workers["dflash"].startswith("sglang.srt.speculative."), workers
    assert workers["model"].startswith("sglang.srt.models.")


def test_a_bad_switch_value_fails_loudly():
    proc = scenarios.run("plugin_host", {}, env={"SGLANG_DFLASH_IMPL": "ours-please"})
    assert proc.returncode != 0 and scenarios.RESULT not in proc.stdout
    assert "SGLANG_DFLASH_IMPL is 'ours-please'" in proc.stderr


@pytest.mark.parametrize("case", STARTUP_ERRORS)
def test_every_startup_error_names_the_value(host, case):
    """Each bad drafter or flag fails at ServerArgs time, naming the value and what was expected."""
    message = host[f"startup: {case}"]
    assert isinstance(message, str), (case, message)
    assert STARTUP_ERRORS[case] in message and "expected" in message, (case, message)


def test_target_family_without_hidden_state_capture_is_rejected(host):
    """A Qwen2 target cannot capture layers for DFLASH in SGLang 0.5.16: say so before loading it."""
    message = host["Qwen2ForCausalLM"]
    assert isinstance(message, str) and "Qwen2ForCausalLM" in message and "expected" in message, message
    assert host["LlamaForCausalLM"] == [[1, 3], 2]


def fake_scheduler_and_batch(algorithm: str, decode: bool, queued: int, penalties: dict):
    """The parts of SGLang's Scheduler and ScheduleBatch the overlap decision reads."""
    from types import SimpleNamespace

    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    neutral = dict(frequency_penalty=0.0, presence_penalty=0.0, repetition_penalty=1.0, min_new_tokens=0)
    reqs = [SimpleNamespace(sampling_params=SimpleNamespace(**neutral))]
    reqs.append(SimpleNamespace(sampling_params=SimpleNamespace(**{**neutral, **penalties})))
    batch = SimpleNamespace(
        spec_algorithm=SpeculativeAlgorithm[algorithm],
        forward_mode=SimpleNamespace(is_decode=lambda: decode),
        reqs=reqs,
    )
    return SimpleNamespace(result_queue=[object()] * queued), batch


@pytest.mark.parametrize(
    "algorithm, decode, queued, penalties, disabled",
    [
        ("DFLASH", True, 1, {"frequency_penalty": 0.5}, True),
        ("DFLASH", True, 1, {"min_new_tokens": 3}, True),
        ("DFLASH", True, 1, {}, False),  # nothing counts generated tokens: keep overlapping
        ("DFLASH", True, 0, {"frequency_penalty": 0.5}, False),  # no result pending
        ("DFLASH", False, 1, {"presence_penalty": 0.5}, False),  # a prefill batch
        ("EAGLE", True, 1, {"frequency_penalty": 0.5}, False),  # not ours
    ],
)
def test_a_penalised_dflash_decode_batch_waits_for_the_previous_result(
    algorithm, decode, queued, penalties, disabled
):
    from sglang_dflash.serving.plugin import _is_disable_overlap_for_batch

    scheduler, batch = fake_scheduler_and_batch(algorithm, decode, queued, penalties)
    assert _is_disable_overlap_for_batch(lambda *_: False, scheduler, batch, None) is disabled
    assert _is_disable_overlap_for_batch(lambda *_: True, scheduler, batch, None) is True  # the host's say
