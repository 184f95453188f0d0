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


def test_the_worker_takes_the_product_startup_timing_chose_unless_told(monkeypatch):
    from sglang_dflash.serving import worker
    from sglang_dflash.serving.worker import small_batch_linears_setting

    head = torch.randn(256, 32)
    monkeypatch.delenv(small_batch_linear.ENV, raising=False)
    timed = []
    for chosen in ("packed", "mm", None):

        def measured(weights, chosen=chosen):
            timed.append(weights)
            return chosen, {"F.linear": 2.0}

        monkeypatch.setattr(small_batch_linear, "fastest_product", measured)
        assert small_batch_linears_setting("cpu", head) == chosen  # auto: as measured
    assert all(len(w) == 1 and w[0] is head for w in timed) and len(timed) == 3
    model = torch.nn.Module()
    model.layer = torch.nn.Linear(32, 64)
    model.lm_head = torch.nn.Linear(32, 256, bias=False)
    small_batch_linears_setting("cpu", model.lm_head.weight, model)  # the model's linears, its lm_head once
    assert [id(w) for w in timed.pop()] == [id(model.layer.weight), id(model.lm_head.weight)]
    assert small_batch_linears_setting("cpu", head.bfloat16()) is None  # float32 only: nothing to time
    assert small_batch_linears_setting("cuda:0", head) is None and len(timed) == 3
    monkeypatch.setenv(small_batch_linear.ENV, "1")
    assert small_batch_linears_setting("cpu") == "mm" and small_batch_linears_setting("cuda:0") is None
    monkeypatch.setenv(small_batch_linear.ENV, "0")
    assert small_batch_linears_setting("cpu", head) is None
    for setting, library in (("packed", "MKL"), ("onednn", "oneDNN")):
        monkeypatch.setenv(small_batch_linear.ENV, setting)
        for exact in (True, False):
            checked = []

            def is_exact(rows=None, product="packed", exact=exact, checked=checked):
                checked.append(product)
                return exact

            monkeypatch.setattr(small_batch_linear, "packed_product_is_exact", is_exact)
            if exact:
                assert small_batch_linears_setting("cpu") == setting
            else:
                with pytest.raises(
                    ValueError, match=f"is '{setting}', but this torch has no {library} packed"
                ):
                    small_batch_linears_setting("cpu")
            assert checked == [setting]  # the product asked for is the one checked
    monkeypatch.setenv(small_batch_linear.ENV, "yes")
    with pytest.raises(ValueError, match="SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR is 'yes'; expected 'auto'"):
        small_batch_linears_setting("cpu")
    assert worker.small_batch_linear is small_batch_linear


@pytest.mark.parametrize("packed_exact", [True, False])
@pytest.mark.parametrize("onednn_exact", [True, False])
def test_auto_takes_the_faster_paying_product_or_none(monkeypatch, packed_exact, onednn_exact):
    """fastest_product: the quickest of mm, packed and onednn among those that pay against F.linear
    (mm under PAYS_BELOW of its time, the packed two under PACKED_PAYS_BELOW); a packed product only
    where its startup check finds it exact."""
    exact = {"packed": packed_exact, "onednn": onednn_exact}
    monkeypatch.setattr(
        small_batch_linear, "packed_product_is_exact", lambda rows=None, product="packed": exact[product]
    )
    for times, expected in (
        (
            {"mm": 8.0, "packed": 6.0, "onednn": 7.0},
            "packed" if packed_exact else "onednn" if onednn_exact else "mm",
        ),
        (
            {"mm": 8.0, "packed": 7.0, "onednn": 5.0},
            "onednn" if onednn_exact else "packed" if packed_exact else "mm",
        ),
        ({"mm": 6.0, "packed": 8.0, "onednn": 8.0}, "mm"),
        ({"mm": 9.5, "packed": 7.0, "onednn": 11.0}, "packed" if packed_exact else None),  # mm within 10%
        ({"mm": 9.5, "packed": 12.0, "onednn": 9.8}, "onednn" if onednn_exact else None),  # mm does not pay
        ({"mm": 9.5, "packed": 10.0, "onednn": 10.5}, None),
    ):

        def measured(weights, products, times=times):
            return {name: 10.0 if name == "F.linear" else times[name] for name in products}

        monkeypatch.setattr(small_batch_linear, "fastest_times", measured)
        product, measured_times = small_batch_linear.fastest_product(torch.randn(8, 4))
        assert product == expected
        assert measured_times["F.linear"] == 10.0 and ("packed" in measured_times) == packed_exact
        assert ("onednn" in measured_times) == onednn_exact


needs_mkl = pytest.mark.skipif(
    not small_batch_linear.packed_available(),
    reason="this torch has no MKL packed GEMM (not an x86 MKL build)",
)
needs_onednn = pytest.mark.skipif(
    not small_batch_linear.onednn_available(),
    reason="this torch has no oneDNN reordered-weight linear ops",
)
# The packed products, each skipped where this torch lacks it.
PACKED_PRODUCTS = [
    pytest.param("packed", marks=needs_mkl),
    pytest.param("onednn", marks=needs_onednn),
]


@pytest.mark.parametrize("product", PACKED_PRODUCTS)
@pytest.mark.parametrize("shape", [(2, 96), (4, 96), (16, 96), (1, 5, 96), (4, 4, 96)])
def test_the_packed_products_equal_f_linear_at_2_to_16_rows(shape, product):
    x = torch.randn(*shape)
    weight = torch.nn.Parameter(torch.randn(200, 96), requires_grad=False)
    bias = torch.randn(200)
    with small_batch_linears(product):
        assert small_batch_linear.applies(x, weight)
        out = linear(x, weight, bias)
    assert out.shape == (*shape[:-1], 200)
    assert torch.allclose(out, F.linear(x, weight, bias), atol=1e-4)
    assert small_batch_linear.packed_product_is_exact(product=product)
    assert (product, id(weight)) in small_batch_linear._packed  # its own product's copy multiplied


@pytest.mark.parametrize("product", PACKED_PRODUCTS)
@pytest.mark.parametrize("rows", [17, 64, 100, 256])
def test_the_packed_products_take_a_whole_batchs_block_up_to_256_rows(rows, product):
    """Past 16 rows only the packed products apply (mm(W, x.T) loses to F.linear there), and only
    to parameters; past PACKED_MAX_ROWS F.linear takes over."""
    x, plain = torch.randn(rows, 96), torch.randn(200, 96)
    weight = torch.nn.Parameter(plain.clone(), requires_grad=False)
    with small_batch_linears(product):
        assert small_batch_linear.applies(x, weight)
        assert not small_batch_linear.applies(x, plain)  # not a parameter: not packed, mm's 16 rows
        assert torch.allclose(linear(x, weight), F.linear(x, weight), atol=1e-4)
        assert not small_batch_linear.applies(torch.randn(257, 96), weight)
    with small_batch_linears("mm"):
        assert not small_batch_linear.applies(x, weight)


@pytest.mark.parametrize("product", PACKED_PRODUCTS)
def test_the_startup_check_covers_every_row_count_the_packed_product_takes(monkeypatch, product):
    checked = []
    name = "onednn_product" if product == "onednn" else "packed_product"
    real = getattr(small_batch_linear, name)

    def counting(x, weight, bias=None):
        checked.append(x.shape[0])
        return real(x, weight, bias)

    monkeypatch.setattr(small_batch_linear, name, counting)
    assert small_batch_linear.packed_product_is_exact(product=product)
    assert checked == list(range(small_batch_linear.MIN_ROWS, small_batch_linear.PACKED_MAX_ROWS + 1))


@pytest.mark.parametrize("product", PACKED_PRODUCTS)
def test_packed_copies_are_made_once_and_dropped_with_their_weight_or_an_update(product):
    weight = torch.nn.Parameter(torch.randn(64, 32), requires_grad=False)
    small_batch_linear.forget_packed()
    first = small_batch_linear.packed_weight(weight, product)
    assert small_batch_linear.packed_weight(weight, product) is first  # kept: packed once
    weight.data.copy_(torch.randn(64, 32))  # as SGLang's loaders write: the version stays
    small_batch_linear.forget_packed()  # what the weight-update hooks do
    x = torch.randn(4, 32)
    with small_batch_linears(product):
        assert torch.allclose(linear(x, weight), F.linear(x, weight), atol=1e-4)  # the new weights
    with torch.no_grad():
        weight.add_(1.0)  # an in-place write that bumps the version repacks by itself
    with small_batch_linears(product):
        assert torch.allclose(linear(x, weight), F.linear(x, weight), atol=1e-4)
    assert list(small_batch_linear._packed) == [(product, id(weight))]
    del weight
    assert len(small_batch_linear._packed) == 0  # no copy outlives its weight


@needs_mkl
@needs_onednn
def test_forgetting_can_keep_one_products_copies():
    weight = torch.nn.Parameter(torch.randn(64, 32), requires_grad=False)
    small_batch_linear.forget_packed()
    small_batch_linear.packed_weight(weight, "packed")
    kept = small_batch_linear.packed_weight(weight, "onednn")
    small_batch_linear.forget_packed(keep="onednn")
    assert list(small_batch_linear._packed) == [("onednn", id(weight))]
    assert small_batch_linear.packed_weight(weight, "onednn") is kept
    small_batch_linear.forget_packed()
    assert not small_batch_linear._packed


@pytest.mark.parametrize("chosen", ["packed", "onednn", "mm", None])
def test_timing_keeps_only_the_chosen_products_copies_of_parameters(monkeypatch, chosen):
    """The startup timing packs every weight for each packed product; a step multiplies by the
    chosen product only, so only its copies stay, and only a parameter's (the weights it packs)."""
    packs = [p for p in ("packed", "onednn") if small_batch_linear.packed_product_is_exact(product=p)]
    if chosen in ("packed", "onednn") and chosen not in packs:
        pytest.skip(f"this torch has no exact {chosen} product to choose")
    times = {name: 1.0 if name == chosen else 20.0 for name in ("mm", "packed", "onednn")}
    real = small_batch_linear.fastest_times

    def timed(weights, products, **kwargs):
        real(weights, products, repeats=1)  # packs as the real timing does
        return {name: 10.0 if name == "F.linear" else times[name] for name in products}

    monkeypatch.setattr(small_batch_linear, "fastest_times", timed)
    small_batch_linear.forget_packed()
    head = torch.nn.Parameter(torch.randn(512, 32), requires_grad=False)
    assert small_batch_linear.fastest_product([torch.randn(256, 32), head])[0] == chosen
    expected = [(chosen, id(head))] if chosen in packs else []
    assert list(small_batch_linear._packed) == expected


@pytest.mark.parametrize("product", ["packed", "onednn"])
def test_a_plain_tensor_weight_takes_mm_even_when_packed_is_active(product):
    """Only parameters are packed: a weight made per call would be packed per call."""
    x, weight = torch.randn(3, 8), torch.randn(4, 8)
    with small_batch_linears(product):
        assert torch.equal(linear(x, weight), few_row_product(x, weight))


def test_weight_updates_drop_the_packed_copies(monkeypatch):
    from sglang_dflash.serving.cpu_backend import forget_packed_after

    dropped = []
    monkeypatch.setattr(small_batch_linear, "forget_packed", lambda: dropped.append(True))
    assert forget_packed_after(lambda self, req: ("ok", req), None, "req") == ("ok", "req")
    with pytest.raises(RuntimeError):
        forget_packed_after(lambda self: (_ for _ in ()).throw(RuntimeError("failed")), None)
    assert dropped == [True, True]  # after a failed update too: weights may be half written


def mm_against_f_linear(weights, **timing) -> tuple[float, float, bool]:
    """mm's and F.linear's fastest ms (small_batch_linear.fastest_times, F.linear timed first in
    each turn) and whether mm pays."""
    times = small_batch_linear.fastest_times(
        weights, {"F.linear": F.linear, "mm": small_batch_linear.mm_product}, **timing
    )
    return times["mm"], times["F.linear"], small_batch_linear.pays("mm", times["mm"], times["F.linear"])


def test_the_startup_timing_compares_both_products_on_the_weight():
    ticks = iter(range(0, 10_000))
    few_ms, linear_ms, pays = mm_against_f_linear(
        torch.randn(64, 16), rows=4, repeats=3, clock=lambda: next(ticks) / 1024
    )
    assert few_ms == linear_ms == 1000 / 1024 and not pays  # equal times: F.linear stays
    few_ms, linear_ms, pays = mm_against_f_linear(torch.randn(4096, 512))
    assert few_ms > 0 and linear_ms > 0 and pays == (few_ms < small_batch_linear.PAYS_BELOW * linear_ms)


def test_the_startup_timing_runs_over_a_steps_linears():
    """Timed on several weights, each timing multiplies every one; the worker gives the target's
    float32 linear weights, not its embeddings, norms or other dtypes."""
    from sglang_dflash.serving.worker import target_linear_weights

    calls = []
    ticks = iter(range(10_000))

    def clock() -> float:
        calls.append(True)
        return next(ticks) / 1024

    weights = [torch.randn(64, 16), torch.randn(16, 48)]
    few_ms, linear_ms, pays = mm_against_f_linear(weights, repeats=2, clock=clock)
    assert len(calls) == 2 * 2 * (2 + 1)  # start and end, both products, repeats and the warm-up
    assert few_ms == linear_ms > 0 and not pays
    model = torch.nn.Module()
    model.embed_tokens = torch.nn.Embedding(10, 16)
    model.proj = torch.nn.Linear(16, 8)
    model.norm = torch.nn.LayerNorm(8)
    model.half_proj = torch.nn.Linear(8, 8).bfloat16()
    assert [id(w) for w in target_linear_weights(model)] == [id(model.proj.weight)]
    model.more = torch.nn.Linear(16, 8)
    everything = [id(model.proj.weight), id(model.more.weight)]
    assert [id(w) for w in target_linear_weights(model)] == everything
    one_weight = model.proj.weight.numel() * 4
    assert [id(w) for w in target_linear_weights(model, budget_bytes=one_weight)] == everything[:1]
    assert len(target_linear_weights(model, budget_bytes=1)) == 1  # at least one, however large


def test_the_startup_timing_takes_each_products_fastest_turn():
    """Other work on the machine only adds time: a slow turn of either product is ignored (by
    medians, 9.2 against 10.1 ms, mm would not pay; by the fastest turns, 8.5 against 10, it does)."""
    durations = iter([99.0, 99.0, 10.0, 8.5, 30.0, 9.2, 10.1, 40.0])  # warm-ups, then in turns, ms
    now, started = [0.0], [False]

    def clock() -> float:
        if started[0]:
            now[0] += next(durations) / 1e3
        started[0] = not started[0]
        return now[0]

    few_ms, linear_ms, pays = mm_against_f_linear(torch.randn(64, 16), rows=4, repeats=3, clock=clock)
    assert (few_ms, linear_ms) == pytest.approx((8.5, 10.0)) and pays


def test_a_width_1_step_keeps_plain_decodings_product_unless_packed():
    from sglang_dflash.serving.worker import step_uses_few_row_linears

    assert step_uses_few_row_linears("mm", 4) == step_uses_few_row_linears("mm", 16) == "mm"
    assert step_uses_few_row_linears("packed", 4) == "packed"
    assert step_uses_few_row_linears("onednn", 4) == "onednn"
    assert step_uses_few_row_linears("mm", 1) is None  # plain decoding's shape: plain decoding's product
    assert step_uses_few_row_linears("packed", 1) == "packed"  # faster than F.linear at any batch
    assert step_uses_few_row_linears("onednn", 1) == "onednn"
    assert step_uses_few_row_linears(None, 4) is None
