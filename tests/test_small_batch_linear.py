"""The few-row linear product of a DFLASH decode step on CPU (sglang_dflash.kernels.small_batch_linear)
and the hooks that route the host's linears and lm_head through it (sglang_dflash.serving.cpu_backend)."""

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from sglang_dflash.kernels import small_batch_linear
from sglang_dflash.kernels.small_batch_linear import SmallBatchLinear, linear, small_batch_linears


def few_row_product(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.mm(weight, x.reshape(-1, x.shape[-1]).t()).t().reshape(*x.shape[:-1], weight.shape[0])


@pytest.mark.parametrize("shape", [(2, 96), (16, 96), (1, 5, 96), (4, 4, 96)])
def test_inside_the_step_2_to_16_rows_take_the_few_row_product(shape):
    x, weight, bias = torch.randn(*shape), torch.randn(200, 96), torch.randn(200)
    with small_batch_linears():
        out = linear(x, weight, bias)
    assert out.shape == (*shape[:-1], 200) and out.is_contiguous()
    assert torch.equal(out, few_row_product(x, weight) + bias)  # the same product, bit for bit
    assert torch.allclose(out, F.linear(x, weight, bias), atol=1e-4)


@pytest.mark.parametrize(
    "rows, dtype, active",
    [
        (1, torch.float32, True),
        (17, torch.float32, True),
        (4, torch.float64, True),
        (4, torch.float32, False),
    ],
)
def test_other_inputs_and_outside_the_step_keep_f_linear_exactly(rows, dtype, active):
    x, weight, bias = (
        torch.randn(rows, 96, dtype=dtype),
        torch.randn(200, 96, dtype=dtype),
        torch.randn(200, dtype=dtype),
    )
    with small_batch_linears(active):
        assert not small_batch_linear.applies(x, weight)
        assert torch.equal(linear(x, weight, bias), F.linear(x, weight, bias))


def test_the_context_restores_the_previous_state_even_on_error():
    x, weight = torch.randn(3, 8), torch.randn(4, 8)
    with small_batch_linears():
        with small_batch_linears(False):
            assert not small_batch_linear.applies(x, weight)
        assert small_batch_linear.applies(x, weight)
        with pytest.raises(KeyError), small_batch_linears(False):
            raise KeyError("boom")
        assert small_batch_linear.applies(x, weight)
    assert not small_batch_linear.applies(x, weight)


def test_the_module_keeps_nn_linears_parameters_and_state_dict():
    torch.manual_seed(0)
    plain = torch.nn.Linear(8, 4)
    few = SmallBatchLinear(8, 4)
    few.load_state_dict(plain.state_dict())
    assert list(few.state_dict()) == ["weight", "bias"]
    x = torch.randn(3, 8)
    with small_batch_linears():
        assert torch.equal(few(x), few_row_product(x, few.weight) + few.bias)
    assert torch.equal(few(x), plain(x))


def hooked(hook, *args):
    """Run a cpu_backend hook over a recording 'original': (its result, whether the host's path ran)."""
    calls = []

    def original(*a):
        calls.append(a)
        return "host"

    return hook(original, *args), bool(calls)


def test_the_linear_hook_leaves_amx_packed_weights_to_the_host():
    from sglang_dflash.serving.cpu_backend import small_batch_linear_apply

    x, weight = torch.randn(3, 8), torch.randn(4, 8)
    with small_batch_linears():
        out, host_ran = hooked(small_batch_linear_apply, None, SimpleNamespace(weight=weight), x, None)
        assert not host_ran and torch.equal(out, few_row_product(x, weight))
        packed = SimpleNamespace(weight=weight, use_intel_amx_backend=True)
        assert hooked(small_batch_linear_apply, None, packed, x, None) == ("host", True)


@pytest.mark.parametrize("case", ["plain", "embedding bias", "lora", "amx", "rl on-policy"])
def test_the_lm_head_hook_takes_only_the_hosts_plain_branch(case):
    from sglang_dflash.serving.cpu_backend import small_batch_lm_head

    hidden, weight = torch.randn(3, 8), torch.randn(12, 8)
    head = SimpleNamespace(weight=weight)
    processor = SimpleNamespace(rl_on_policy_target="policy" if case == "rl on-policy" else None)
    bias = torch.zeros(12) if case == "embedding bias" else None
    if case == "lora":
        head.set_lora = head.apply_lora = lambda *a: None
    if case == "amx":
        head.use_intel_amx_backend = True
    with small_batch_linears():
        out, host_ran = hooked(small_batch_lm_head, processor, hidden, head, bias)
    assert host_ran == (case != "plain")
    if case == "plain":
        assert torch.equal(out, few_row_product(hidden, weight))


def test_the_worker_takes_it_on_cpu_where_it_pays_unless_told(monkeypatch):
    from sglang_dflash.serving import worker
    from sglang_dflash.serving.worker import small_batch_linears_setting

    head = torch.randn(256, 32)
    monkeypatch.delenv(small_batch_linear.ENV, raising=False)
    timed = []
    for pays in (True, False):

        def measured(weight, pays=pays):
            timed.append(weight)
            return pays, 1.0, 2.0

        monkeypatch.setattr(small_batch_linear, "few_row_product_pays", measured)
        assert small_batch_linears_setting("cpu", head) == pays  # auto: as measured on the lm_head
    assert all(w is head for w in timed) and len(timed) == 2
    assert not small_batch_linears_setting("cpu", head.bfloat16())  # float32 only: nothing to time
    assert not small_batch_linears_setting("cuda:0", head) and len(timed) == 2
    monkeypatch.setenv(small_batch_linear.ENV, "1")
    assert small_batch_linears_setting("cpu") and not small_batch_linears_setting("cuda:0")
    monkeypatch.setenv(small_batch_linear.ENV, "0")
    assert not small_batch_linears_setting("cpu", head)
    monkeypatch.setenv(small_batch_linear.ENV, "yes")
    with pytest.raises(ValueError, match="SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR is 'yes'; expected 'auto'"):
        small_batch_linears_setting("cpu")
    assert worker.small_batch_linear is small_batch_linear


def test_the_startup_timing_compares_both_products_on_the_weight():
    ticks = iter(range(0, 10_000))
    pays, few_ms, linear_ms = small_batch_linear.few_row_product_pays(
        torch.randn(64, 16), rows=4, repeats=3, clock=lambda: next(ticks) / 1024
    )
    assert few_ms == linear_ms == 1000 / 1024 and not pays  # equal times: F.linear stays
    pays, few_ms, linear_ms = small_batch_linear.few_row_product_pays(torch.randn(4096, 512))
    assert few_ms > 0 and linear_ms > 0 and pays == (few_ms < small_batch_linear.PAYS_BELOW * linear_ms)


def test_a_width_1_step_keeps_plain_decodings_product():
    from sglang_dflash.serving.worker import step_uses_few_row_linears

    assert step_uses_few_row_linears(True, 4) and step_uses_few_row_linears(True, 16)
    assert not step_uses_few_row_linears(True, 1)  # plain decoding's shape: plain decoding's product
    assert not step_uses_few_row_linears(False, 4)
