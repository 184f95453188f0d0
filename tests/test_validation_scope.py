"""Our request checks apply to servers running our DFLASH only.

SGLang's scheduler calls ``validate_dflash_request`` for its whole DFLASH family (DFLASH and
DSPARK), with the request alone.  A DSPARK server, or one running SGLang's built-in DFLASH, in an
environment with our plugin installed must keep the host's answers (it refuses logprobs, grammars
and, under the overlap scheduler, hidden states), since its worker cannot serve what ours serves.
The check is built here as SGLang's hook registry builds it from our registration (no process-wide
patch), over the host's own function, under the ServerArgs the scheduler process publishes before
it takes requests.
"""

from types import SimpleNamespace

import pytest

pytest.importorskip("sglang", reason="needs the sglang extra installed")

from sglang.srt.plugins.hook_registry import HookType, _wrap_fn  # noqa: E402
from sglang.srt.runtime_context import get_context  # noqa: E402
from sglang.srt.server_args import set_global_server_args_for_scheduler  # noqa: E402
from sglang.srt.speculative import dflash_utils  # noqa: E402

from sglang_dflash.serving import plugin  # noqa: E402

HOST_LOGPROB_REFUSAL = "DFLASH speculative decoding does not support return_logprob yet."


def request(**fields) -> SimpleNamespace:
    """A request with what both the host's check and ours read; no option set unless given."""
    params = dict(json_schema=None, regex=None, ebnf=None, structural_tag=None)
    base = dict(
        return_logprob=False,
        return_hidden_states=False,
        origin_input_ids=[1, 2, 3],
        custom_logit_processor=None,
        sampling_params=SimpleNamespace(**{**params, **fields.pop("sampling", {})}),
    )
    return SimpleNamespace(**{**base, **fields})


def hooked(target: str, original):
    """``original`` wrapped by our hook on ``target`` exactly as SGLang's hook registry wraps it."""
    ((hook, kind),) = [(fn, kind) for name, fn, kind in plugin.OUR_HOOKS if name == target]
    return _wrap_fn(original, hook, HookType[kind])


def verdict(req: SimpleNamespace) -> str | None:
    """What the scheduler's request check answers with our hook in place (overlap scheduler on)."""
    return hooked(plugin.VALIDATE_REQUEST, dflash_utils.validate_dflash_request)(req, True)


@pytest.fixture
def publish(monkeypatch):
    """Publish ServerArgs naming an algorithm, as the target model runner does in the scheduler process."""
    context = get_context()
    monkeypatch.setattr(context, "_server_args", context._server_args)  # restored after the test

    def publish_algorithm(algorithm: str) -> None:
        set_global_server_args_for_scheduler(SimpleNamespace(speculative_algorithm=algorithm))

    return publish_algorithm


def test_a_dflash_server_takes_logprobs_grammars_and_hidden_states(publish):
    publish("DFLASH")
    assert verdict(request(return_logprob=True)) is None
    assert verdict(request(sampling={"json_schema": '{"type": "object"}'})) is None
    assert verdict(request(return_hidden_states=True)) is None


def test_a_dflash_server_refuses_an_empty_prompt_with_our_message(publish):
    publish("DFLASH")
    message = verdict(request(origin_input_ids=[]))
    assert message is not None and message.startswith("sglang-dflash: the prompt"), message


def test_a_dspark_server_keeps_the_hosts_request_check(publish):
    publish("DSPARK")
    assert verdict(request(return_logprob=True)) == HOST_LOGPROB_REFUSAL
    assert "grammar-constrained" in verdict(request(sampling={"json_schema": '{"type": "object"}'}))
    assert "return_hidden_states" in verdict(request(return_hidden_states=True))


def test_a_dspark_server_does_not_get_our_refusals(publish):
    publish("DSPARK")
    assert verdict(request(origin_input_ids=[])) is None


def test_the_builtin_dflash_keeps_the_hosts_request_check(publish, monkeypatch):
    monkeypatch.setenv(plugin.IMPL_ENV, plugin.BUILTIN)
    publish("DFLASH")
    assert verdict(request(return_logprob=True)) == HOST_LOGPROB_REFUSAL


def test_the_server_check_runs_for_dflash_only(monkeypatch):
    """DSPARK startup goes straight to the host's checks; DFLASH startup runs ours first."""
    from sglang_dflash.serving import validation

    checked = []
    monkeypatch.setattr(validation, "check_server_args", lambda args: checked.append(args))
    handle = hooked(plugin.HANDLE_SPECULATIVE, lambda args: None)
    for algorithm in ("DSPARK", "dflash"):
        handle(SimpleNamespace(speculative_algorithm=algorithm))
    assert [args.speculative_algorithm for args in checked] == ["dflash"]


def test_every_hook_keyed_on_the_algorithm_leaves_dspark_to_the_host():
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    dspark, host_answer = SpeculativeAlgorithm.DSPARK, object()

    def original(*args, **kwargs):
        return host_answer

    runner = SimpleNamespace(model_runner=SimpleNamespace(spec_algorithm=dspark, is_draft_worker=False))
    aux = dict(config=None, server_args=None, model_config=None, spec_algorithm=dspark, is_draft_worker=False)
    assert plugin._create_worker(original, dspark, SimpleNamespace()) is host_answer
    assert hooked(plugin.GRAPH_SPEC_INFO, original)(runner, 8) is host_answer
    assert hooked(plugin.DUMMY_VERIFY, original)(dspark, None, None, 8, False) is host_answer
    assert hooked(plugin.RESOLVE_AUX, original)(**aux) is host_answer
