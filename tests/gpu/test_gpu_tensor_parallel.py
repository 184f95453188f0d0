"""DFLASH at ``--tp-size 2`` on two GPUs (run on a host with two: ``python -m pytest -m gpu
tests/gpu/test_gpu_tensor_parallel.py -s``; an H100 session of this project has one GPU, so it skips).

A random-weight Qwen3 target (4 query heads, 2 K/V heads: divisible by 2, unlike SmolLM2's 9/3) and a
random drafter of its shape, through ``sglang.Engine`` with the triton backend: plain decoding and
our DFLASH at TP=2, both re-scored teacher-forced by the float32 target (bf16 decode and a 16-token
verify round differently, so tokens must be the target's argmax or a near-tie, as in
test_gpu_serving.py).  The CPU half (three ranks over gloo, exact in float32) is
tests/serving/test_dflash_tensor_parallel.py.
"""

import os

import pytest

pytestmark = pytest.mark.gpu

SMOLLM2 = os.environ.get("SMOLLM2_PATH", "/tmp/models/smollm2-135m-instruct")
TP, NUM_PROMPTS, MAX_NEW_TOKENS = 2, 16, 96


def gpu_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    if gpu_count() < TP:
        pytest.skip(f"needs {TP} GPUs, found {gpu_count()}")
    from sglang_dflash.testing import save_random_drafter, save_random_qwen3_target

    root = tmp_path_factory.mktemp("tp-pair")
    target = save_random_qwen3_target(str(root / "target"), SMOLLM2)
    return target, save_random_drafter(target, str(root / "drafter"))


def generate(target: str, prompts: list[list[int]], **engine_kwargs) -> list[dict]:
    import sglang

    engine = sglang.Engine(
        model_path=target,
        tp_size=TP,
        attention_backend="triton",
        mem_fraction_static=0.4,
        disable_radix_cache=True,
        **engine_kwargs,
    )
    try:
        return engine.generate(
            input_ids=prompts, sampling_params={"temperature": 0, "max_new_tokens": MAX_NEW_TOKENS}
        )
    finally:
        engine.shutdown()


def test_dflash_at_tp2_is_lossless_teacher_forced(pair):
    import torch
    from transformers import AutoModelForCausalLM

    from sglang_dflash.evaluation import ConsistencyReport, teacher_forced_gaps

    target, drafter = pair
    g = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(3, 49000, (int(n),), generator=g).tolist() for n in torch.randint(8, 64, (NUM_PROMPTS,))
    ]
    plain = generate(target, prompts)
    ours = generate(target, prompts, speculative_algorithm="DFLASH", speculative_draft_model_path=drafter)
    model = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32).cuda().eval()
    rates = {
        name: ConsistencyReport.from_gaps(
            teacher_forced_gaps(model, prompts, [o["output_ids"] for o in out])
        ).rate
        for name, out in (("plain", plain), ("dflash", ours))
    }
    print(f"\nTP={TP} greedy consistency (teacher-forced, float32 target): {rates}")
    assert all(o["meta_info"]["spec_verify_ct"] >= 1 for o in ours)
    assert rates["dflash"] >= rates["plain"] - 1e-9, rates
