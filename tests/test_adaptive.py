"""The verify-width policy's decisions on synthetic step times and acceptance."""

import itertools
import json
import math

import pytest

from sglang_dflash.adaptive import AdaptiveConfig, TreeStep, VerifyWidthPolicy, batch_bucket

WIDTHS = (1, 4, 8, 16)


def observe(policy: VerifyWidthPolicy, bs: int, width: int, seconds: float, num_correct_drafts) -> None:
    """One finished step as the worker reports it: its time, then the drafts each request accepted."""
    policy.record_time(bs, width, seconds)
    policy.record_acceptance(width, num_correct_drafts or ())


def accepted(policy: VerifyWidthPolicy) -> float:
    """The policy's decayed count of accepted drafts, over every block position."""
    return sum(policy.passed)


def rejected(policy: VerifyWidthPolicy) -> float:
    """Its decayed count of rejections (a request that stopped before its step's last draft)."""
    return sum(policy.reached) - sum(policy.passed)


def one_acceptance_probability(policy: VerifyWidthPolicy) -> float:
    """The policy's counts pooled into one acceptance probability for every position, with its
    priors: what a geometric run (the policy's model before 2026-12-04) would use."""
    s = accepted(policy) + policy.config.prior_accepted
    return s / (s + rejected(policy) + policy.config.prior_rejected)


def geometric_runs(accept: float, steps: int) -> list[int]:
    """``steps`` runs of accepted drafts drawn from a geometric distribution (each draft accepted with
    probability ``accept`` after an accepted one) at evenly spaced quantiles, visited in a scattered
    order (the counts decay, so sorted runs would weigh the long ones most): reproducible, and with
    the distribution's own shape (a few long runs, many short ones)."""
    assert math.gcd(steps, 13) == 1
    if accept <= 0:
        return [0] * steps
    quantiles = [(i * 13 % steps + 0.5) / steps for i in range(steps)]
    return [int(math.log(1 - u) / math.log(accept)) for u in quantiles]


def policy_with(
    step_seconds, bs: int, accepted_fraction: float, steps: int = 40, explore_every: int = 1000
) -> VerifyWidthPolicy:
    """A policy that has measured ``step_seconds[k]`` at batch ``bs`` and seen whole-block steps
    accept geometric runs of drafts with continuation probability ``accepted_fraction``."""
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS, explore_every=explore_every))
    for _ in range(len(WIDTHS)):
        width = policy.choose(bs)
        observe(policy, bs, width, step_seconds[width], None)
    for run in geometric_runs(accepted_fraction, steps):
        observe(policy, bs, 16, step_seconds[16], [min(run, 15)] * bs)
    return policy


def cpu_like_seconds(bs: int) -> dict[int, float]:
    """Verify cost grows with bs * width (compute-bound), plus a drafter pass for widths > 1."""
    return {k: 0.01 + 0.002 * bs * k + (0.004 * bs if k > 1 else 0.0) for k in WIDTHS}


def memory_bound_seconds(bs: int) -> dict[int, float]:
    """Verify cost nearly flat in width (a GPU at small batch)."""
    return {k: 0.010 + 0.0001 * k for k in WIDTHS}


def test_high_acceptance_at_small_batch_verifies_the_whole_block():
    policy = policy_with(memory_bound_seconds(1), bs=1, accepted_fraction=0.9)
    assert one_acceptance_probability(policy) > 0.8
    assert policy.choose(1) == 16


def test_low_acceptance_falls_back_to_plain_decoding_where_drafting_costs_time():
    policy = policy_with(cpu_like_seconds(1), bs=1, accepted_fraction=0.05)
    assert policy.choose(1) == 1


def test_a_large_compute_bound_batch_verifies_narrower_than_a_small_one():
    small = policy_with(cpu_like_seconds(1), bs=1, accepted_fraction=0.7)
    large = policy_with(cpu_like_seconds(32), bs=32, accepted_fraction=0.7)
    assert large.choose(32) < small.choose(1)
    assert large.choose(32) == 1


def test_a_bucket_climbs_from_the_narrowest_width_while_the_wider_one_wins():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    tried = []
    for _ in WIDTHS:
        width = policy.choose(3)
        tried.append(width)
        observe(policy, 3, width, 1.0, None)  # equal times: before any evidence each wider width wins
    assert tried == list(WIDTHS)


def test_a_batch_too_large_for_drafting_never_tries_wider_than_the_narrowest_drafting_width():
    """Before, each batch-size bucket tried every width once: at 16 requests a whole-block verify
    cost about five plain steps, and a draining batch paid it again in every bucket it passed."""
    seconds = cpu_like_seconds(16)
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS, explore_every=8))
    chosen = []
    for _ in range(40):
        width = policy.choose(16)
        chosen.append(width)
        observe(policy, 16, width, seconds[width], [1] * 16 if width > 1 else None)
    assert set(chosen) == {1, 4}, chosen
    assert chosen[:2] == [1, 4]
    assert chosen.count(4) <= 1 + 40 // 8


def test_plain_decoding_is_left_periodically_for_the_narrowest_drafting_width_only():
    policy = policy_with(cpu_like_seconds(1), bs=1, accepted_fraction=0.0, explore_every=8)
    chosen = [policy.choose(1) for _ in range(16)]
    assert chosen.count(1) == 14
    assert set(chosen) == {1, 4}, chosen  # never a whole-block probe from plain decoding


def test_re_measurement_alternates_between_both_neighbours_of_the_best_width():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS, explore_every=2))
    assert policy.neighbours(8) == [4, 16]
    assert policy.neighbours(1) == [4]
    assert policy.neighbours(16) == [8]


def test_acceptance_counts_decay_so_a_change_in_the_text_is_followed():
    policy = policy_with(cpu_like_seconds(1), bs=1, accepted_fraction=0.9)
    assert policy.choose(1) > 1
    for _ in range(60):
        observe(policy, 1, 16, cpu_like_seconds(1)[16], [0])
    assert policy.choose(1) == 1


def test_a_step_that_accepts_every_verified_draft_counts_no_rejection():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    observe(policy, 2, 4, 0.01, [3, 3])
    assert rejected(policy) == 0
    assert accepted(policy) == 6
    observe(policy, 2, 1, 0.01, [0, 0])  # plain decoding says nothing about drafts: the counts only decay
    assert (accepted(policy), rejected(policy)) == pytest.approx((6 * policy.config.accept_decay, 0))


def test_acceptance_is_counted_per_block_position_up_to_the_verified_width():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    observe(policy, 3, 8, 0.01, [7, 2, 0])  # all 7 drafts; 2 then a rejection; a rejection at once
    assert policy.reached[:8] == [3, 2, 2, 1, 1, 1, 1, 0]
    assert policy.passed[:8] == [2, 2, 1, 1, 1, 1, 1, 0]
    assert (accepted(policy), rejected(policy)) == (9, 2)


def test_a_position_no_step_verified_continues_the_last_measured_one():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    for run in geometric_runs(0.8, 40):
        observe(policy, 1, 4, 0.01, [min(run, 3)])
    acceptance = policy.draft_acceptance()
    assert acceptance[3:] == pytest.approx([acceptance[2]] * 12)
    assert 0.6 < acceptance[2] < 1.0  # measured: above the prior of 0.5


def mixed_text_runs(steps: int) -> list[int]:
    """Runs of accepted drafts on a text of easy stretches (a draft accepted with probability 0.9
    after an accepted one) and hard ones (0.3), alternating step by step."""
    easy, hard = geometric_runs(0.9, steps // 2), geometric_runs(0.3, steps // 2)
    return [run for pair in zip(easy, hard[::-1], strict=True) for run in pair]


def test_a_text_of_easy_and_hard_stretches_verifies_the_whole_block_where_it_pays():
    """Acceptance after several accepted drafts is higher than at the first one when easy and hard
    stretches mix: one acceptance probability for every position, measured at widths 4 and 8,
    predicts too little from width 16 and stays at width 8, while per position the policy finds
    that the whole block pays."""
    seconds = {1: 0.010, 4: 0.011, 8: 0.012, 16: 0.0144}  # the whole block 1.2x width 8's time
    runs = mixed_text_runs(200)

    def tokens_per_second(width: int) -> float:
        return sum(min(run, width - 1) + 1 for run in runs) / len(runs) / seconds[width]

    assert max(WIDTHS, key=tokens_per_second) == 16
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    chosen = []
    for run in itertools.islice(itertools.cycle(runs), 400):
        width = policy.choose(1)
        chosen.append(width)
        observe(policy, 1, width, seconds[width], [min(run, width - 1)])
    assert chosen[200:].count(16) > 150, chosen[200:]


# Verify steps by tokens committed (index), the sixtieth SmolLM2 drafter's GSM8K replay at block 16
# (100 prompts, `steps_per_commit` of its tau file): acceptance falls from 0.58 at the first draft.
GSM8K_STEPS_PER_COMMIT = [0, 3722, 2426, 1394, 742, 358, 105, 21, 48, 12, 8, 4, 1, 0, 0, 0, 0]


def test_per_position_acceptance_predicts_a_real_drafters_tokens_where_one_probability_does_not():
    runs = [c - 1 for c, n in enumerate(GSM8K_STEPS_PER_COMMIT) for _ in range(n)]
    runs = [runs[i * 7919 % len(runs)] for i in range(len(runs))]  # scattered: the counts decay
    assert math.gcd(len(runs), 7919) == 1

    def committed(width: int) -> float:
        return sum(min(run, width - 1) + 1 for run in runs) / len(runs)

    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS, accept_decay=0.9999))
    for run in runs:  # what a policy verifying width 4 sees
        observe(policy, 1, 4, 0.01, [min(run, 3)])
    a = one_acceptance_probability(policy)
    one_probability = {k: (1 - a**k) / (1 - a) for k in (4, 8)}
    assert policy.expected_tokens(4) == pytest.approx(committed(4), abs=0.005)
    assert abs(one_probability[4] - committed(4)) > 0.015
    assert abs(policy.expected_tokens(8) - committed(8)) < abs(one_probability[8] - committed(8)) - 0.02


def test_after_a_run_of_rejections_plain_decoding_drafts_again_without_a_probe():
    """The evidence that sent the policy to plain decoding fades while it decodes plainly (no drafts
    seen), so it drafts again by itself: before, only a probe every explore_every steps could
    outweigh that evidence, and one bad stretch kept a good drafter off for hundreds of steps."""
    seconds = cpu_like_seconds(1)
    policy = policy_with(seconds, bs=1, accepted_fraction=0.6)
    assert policy.choose(1) > 1
    for _ in range(12):  # an unlucky stretch: nothing accepted
        observe(policy, 1, 4, seconds[4], [0])
    assert policy.choose(1) == 1
    plain_steps = 0
    while policy.choose(1) == 1 and plain_steps < 200:
        observe(policy, 1, 1, seconds[1], [0])
        plain_steps += 1
    assert plain_steps < 100, plain_steps


def test_one_slow_step_does_not_move_a_widths_time():
    """A width's time is the median of its recent steps: a prefill or another process taking the
    core for one step changes nothing, while a lasting change in load is followed."""
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS, time_window=5))
    for seconds in (0.10, 0.11, 0.10, 0.95, 0.10):
        policy.record_time(1, 4, seconds)
    assert policy.timings[1, 4].seconds == pytest.approx(0.10)
    for _ in range(3):
        policy.record_time(1, 4, 0.2)
    assert policy.timings[1, 4].seconds == pytest.approx(0.2)


def test_a_step_is_timed_from_its_start_to_the_next_steps_start_and_not_across_a_prefill():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    policy.step_started(10.0)
    policy.step_finished(2, 4, 10.0, [1, 0])
    policy.step_started(10.3)  # the scheduler's whole cycle: 0.3 s
    assert policy.timings[2, 4].seconds == pytest.approx(0.3)
    policy.step_finished(2, 1, 10.3, [0, 0])
    policy.cycle_interrupted()  # a prefill ran before the next step
    policy.step_started(20.0)
    assert (2, 1) not in policy.timings
    decay = policy.config.accept_decay
    assert (accepted(policy), rejected(policy)) == pytest.approx((1 * decay, 2 * decay))


def test_batch_sizes_share_step_times_by_power_of_two():
    assert [batch_bucket(bs) for bs in (1, 2, 3, 4, 7, 8, 9, 48)] == [1, 2, 2, 4, 4, 8, 8, 32]


def test_widths_are_capped_at_the_block_size_and_the_default_adds_the_whole_block():
    assert AdaptiveConfig(widths=(1, 4, 8, 16)).for_block_size(8).widths == (1, 4, 8)
    assert AdaptiveConfig(widths=(1, 4, 32)).for_block_size(16).widths == (1, 4, 16)
    assert AdaptiveConfig().for_block_size(16).widths == (1, 4, 8, 16)
    assert AdaptiveConfig().for_block_size(8).widths == (1, 4, 8)
    assert AdaptiveConfig().for_block_size(32).widths == (1, 4, 8, 16, 32)
    # Widths given explicitly are kept: [1, 2] never verifies a whole block of 6.
    assert AdaptiveConfig(widths=(1, 2)).for_block_size(6).widths == (1, 2)


def test_widths_of_one_means_plain_decoding_that_never_probes_a_drafting_width():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=[1]).for_block_size(16))
    for step in range(100):  # every bucket, past several explore_every periods
        bs = 1 + step % 20
        width = policy.choose(bs)
        assert width == 1
        observe(policy, bs, width, 0.01, None)


TREE = TreeStep(5)


def run_with_tree(seconds: dict, bs: int, tree_drafts: list[int], steps: int = 60) -> list:
    """What a policy offered ``TREE`` chooses over ``steps`` steps of ``bs`` requests, its step times
    ``seconds`` (1: plain decoding, ``TREE``), each tree step accepting ``tree_drafts`` in turn."""
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS, explore_every=8))
    chosen = []
    for step in range(steps):
        choice = policy.choose(bs, TREE)
        chosen.append(choice)
        policy.record_time(bs, choice, seconds[choice])
        if choice == TREE:
            policy.record_tree_acceptance(TREE, [tree_drafts[step % len(tree_drafts)]] * bs)
        else:
            policy.record_acceptance(choice, [0] * bs)
    return chosen


def test_a_tree_takes_the_drafting_widths_place_beside_plain_decoding():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    assert policy.candidates() == WIDTHS
    assert policy.candidates(TREE) == (1, TREE)
    assert VerifyWidthPolicy(AdaptiveConfig(widths=(4, 16))).candidates(TREE) == (TREE,)
    # [1] is plain decoding: no tree either.
    assert VerifyWidthPolicy(AdaptiveConfig(widths=(1,))).candidates(TREE) == (1,)
    assert policy.neighbours(1, policy.candidates(TREE)) == [TREE]


def test_a_tree_that_commits_more_per_second_than_plain_decoding_is_chosen():
    # The shipped SmolLM2 tree at one request on CPU: 1.6 plain steps, 1.2 drafts accepted a step.
    chosen = run_with_tree({1: 0.050, TREE: 0.080}, bs=1, tree_drafts=[0, 1, 2, 2, 1])
    assert chosen[0] == 1 and chosen[1] == TREE  # starts plain, then tries its neighbour
    assert chosen[20:].count(1) <= 40 // 8, chosen  # plain decoding: its re-measurements only


def test_a_tree_that_costs_more_than_its_tokens_leaves_the_batch_to_plain_decoding():
    chosen = run_with_tree({1: 0.050, TREE: 0.200}, bs=32, tree_drafts=[0, 1, 0, 2])
    assert chosen[20:].count(TREE) <= 40 // 8, chosen  # the tree: its re-measurements only
    assert TREE in chosen[20:]


def test_a_tree_steps_expected_tokens_are_its_decayed_mean_from_the_chains_estimate():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    assert policy.expected_tokens(TREE) == pytest.approx(policy.expected_tokens(16))  # no steps yet
    for _ in range(200):
        policy.record_tree_acceptance(TREE, [2, 2])  # three tokens a request
    # The prior's two pseudo-requests stay beside the ~40 requests the decay keeps.
    assert policy.expected_tokens(TREE) == pytest.approx(3.0, abs=0.06)
    assert policy.expected_tokens(TreeStep(8)) == pytest.approx(policy.expected_tokens(16))  # its own counts
    for _ in range(40):  # the text changes: one token a request
        policy.record_tree_acceptance(TREE, [0, 0])
    assert policy.expected_tokens(TREE) < 1.3
    observe(policy, 2, 4, 0.01, [3, 3])
    before = policy.tree_requests[TREE.nodes]
    policy.record_tree_acceptance(TREE, [])  # a chain step and a tree step decay every count alike
    assert policy.tree_requests[TREE.nodes] == pytest.approx(before * policy.config.accept_decay)
    assert accepted(policy) == pytest.approx(6 * policy.config.accept_decay)


def test_a_tree_step_is_timed_and_counted_as_the_tree():
    policy = VerifyWidthPolicy(AdaptiveConfig(widths=WIDTHS))
    policy.step_started(10.0)
    policy.step_finished(2, TREE, 10.0, [1, 3])
    policy.step_started(10.2)
    assert policy.timings[2, TREE].seconds == pytest.approx(0.2)
    assert (policy.tree_requests[TREE.nodes], policy.tree_tokens[TREE.nodes]) == (2, 6)
    assert accepted(policy) == 0  # the chain's per-position counts are the chain steps'


def test_a_policy_needs_the_widths_of_one_block_size():
    with pytest.raises(ValueError, match="config.widths is None; expected the widths of one block size"):
        VerifyWidthPolicy(AdaptiveConfig())


@pytest.mark.parametrize(
    "values, needle",
    [
        ({"widths": []}, "widths is []"),
        ({"widths": [0, 4]}, "widths is [0, 4]"),
        ({"explore_every": 1}, "explore_every is 1"),
        ({"time_window": 0}, "time_window is 0; expected an integer >= 1"),
        ({"time_decay": 0.7}, "keys ['time_decay'] are unknown"),
        ({"accept_decay": 1.0}, "accept_decay is 1.0"),
        ({"prior_rejected": 0}, "prior_rejected is 0"),
        ({"candidate_steps": [1, 3]}, "keys ['candidate_steps'] are unknown"),
    ],
)
def test_a_bad_config_names_the_flag_the_key_and_the_value(values, needle):
    with pytest.raises(ValueError) as info:
        AdaptiveConfig.from_dict(values)
    assert "--speculative-adaptive-config" in str(info.value)
    assert needle in str(info.value)


def test_the_config_file_is_read_or_refused_naming_the_path(tmp_path):
    path = tmp_path / "adaptive.json"
    path.write_text(json.dumps({"widths": [1, 8], "explore_every": 16}))
    assert AdaptiveConfig.from_flag(str(path)) == AdaptiveConfig(widths=(1, 8), explore_every=16)
    path.write_text("[1, 8]")
    with pytest.raises(ValueError, match="holds list; expected a JSON object"):
        AdaptiveConfig.from_flag(str(path))
    with pytest.raises(ValueError, match="no-such.json"):
        AdaptiveConfig.from_flag(str(tmp_path / "no-such.json"))
    path.write_text("{widths: [1, 8]}")
    with pytest.raises(ValueError, match="adaptive.json.*expected the path of a readable JSON file"):
        AdaptiveConfig.from_flag(str(path))


def test_no_config_is_the_defaults():
    assert AdaptiveConfig.from_flag(None) == AdaptiveConfig()


def test_null_widths_are_the_default_widths_and_the_whole_block():
    """``{"widths": null}`` reads as no widths given: the defaults and the whole block."""
    config = AdaptiveConfig.from_flag('{"widths": null}')
    assert config == AdaptiveConfig()
    assert config.for_block_size(16).widths == (1, 4, 8, 16)
    assert config.for_block_size(10).widths == (1, 4, 8, 10)


def test_an_inline_json_object_is_read_as_the_config():
    """The flag takes a JSON object as well as a file path (a value starting with ``{``)."""
    value = ' \n {"widths": [1, 8], "explore_every": 16}'
    assert AdaptiveConfig.from_flag(value) == AdaptiveConfig(widths=(1, 8), explore_every=16)


def test_an_inline_object_that_is_not_json_is_refused_naming_the_value():
    with pytest.raises(ValueError) as info:
        AdaptiveConfig.from_flag("{widths: [1, 8]}")
    message = str(info.value)
    assert "--speculative-adaptive-config is '{widths: [1, 8]}'" in message, message
    assert "expected a JSON object" in message, message


def test_a_missing_file_is_refused_as_neither_json_nor_a_readable_file(tmp_path):
    missing = str(tmp_path / "no-such.json")
    with pytest.raises(ValueError) as info:
        AdaptiveConfig.from_flag(missing)
    message = str(info.value)
    assert f"--speculative-adaptive-config is {missing!r}; expected a JSON object or" in message, message
    assert "readable JSON file" in message, message


def test_an_inline_object_with_an_unknown_key_is_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"keys \['candidate_steps'\] are unknown"):
        AdaptiveConfig.from_flag('{"candidate_steps": [1, 3]}')


def server_args(**fields):
    from types import SimpleNamespace

    defaults = {"speculative_adaptive": True, "speculative_adaptive_config": None, "device": "cpu"}
    return SimpleNamespace(**{**defaults, **fields})


def test_the_adaptive_flag_is_taken_from_the_host_and_kept_for_the_worker_on_cpu():
    from sglang_dflash.adaptive import ADAPTIVE_ATTR
    from sglang_dflash.serving.validation import take_adaptive_settings

    args = server_args()
    take_adaptive_settings(args)
    assert args.speculative_adaptive is False  # the host's EAGLE policy never sees it
    assert AdaptiveConfig.from_dict(getattr(args, ADAPTIVE_ATTR)) == AdaptiveConfig()


def test_without_the_flag_nothing_is_kept():
    from sglang_dflash.adaptive import ADAPTIVE_ATTR
    from sglang_dflash.serving.validation import take_adaptive_settings

    args = server_args(speculative_adaptive=False)
    take_adaptive_settings(args)
    assert not hasattr(args, ADAPTIVE_ATTR)


def test_the_adaptive_flag_on_a_gpu_is_refused_naming_it():
    from sglang_dflash.serving.validation import take_adaptive_settings

    with pytest.raises(ValueError, match="--speculative-adaptive is True; expected --device cpu"):
        take_adaptive_settings(server_args(device="cuda"))


def test_a_bad_adaptive_config_file_stops_startup_naming_the_flag(tmp_path):
    from sglang_dflash.serving.validation import take_adaptive_settings

    path = tmp_path / "adaptive.json"
    path.write_text(json.dumps({"widths": [0]}))
    with pytest.raises(ValueError, match="--speculative-adaptive-config: widths is"):
        take_adaptive_settings(server_args(speculative_adaptive_config=str(path)))


def test_an_inline_adaptive_config_is_kept_for_the_worker():
    from sglang_dflash.adaptive import ADAPTIVE_ATTR
    from sglang_dflash.serving.validation import take_adaptive_settings

    args = server_args(speculative_adaptive_config='{"widths": [1, 2]}')
    take_adaptive_settings(args)
    assert AdaptiveConfig.from_dict(getattr(args, ADAPTIVE_ATTR)) == AdaptiveConfig(widths=(1, 2))


def widths_chosen_after_a_slow_sample(confirm_promising: bool, steps: int = 40) -> list[int]:
    """Width 4 truly takes half width 8's step time, but its first three steps were measured slow
    (another process held the core), so width 8 leads; every step then takes its true time."""
    true_seconds = {1: 0.05, 4: 0.06, 8: 0.12, 16: 0.5}
    config = AdaptiveConfig(widths=WIDTHS, explore_every=8, confirm_promising=confirm_promising)
    policy = VerifyWidthPolicy(config)
    for width, samples in ((1, [0.05]), (4, [0.3] * 3), (8, [0.12] * 5), (16, [0.5])):
        for seconds in samples:
            policy.record_time(1, width, seconds)
    for _ in range(20):  # two of seven drafts accepted per step: width 8 beats plain decoding
        policy.record_acceptance(8, [2])
    chosen = []
    for _ in range(steps):
        width = policy.choose(1)
        chosen.append(width)
        observe(policy, 1, width, true_seconds[width], [min(2, width - 1)])
    return chosen


def test_a_neighbour_measured_fast_again_is_confirmed_at_once_instead_of_waiting_for_its_median():
    """Its median rests on samples explore_every steps apart: without confirmation one slow sample
    among them keeps the slower width for about a hundred steps (a CPU bench at one request
    verified width 8 on 28 of 95 steps at twice width 4's step time)."""
    confirmed = widths_chosen_after_a_slow_sample(confirm_promising=True)
    unconfirmed = widths_chosen_after_a_slow_sample(confirm_promising=False)
    assert confirmed[0] == 8 and unconfirmed[0] == 8
    first_probe = confirmed.index(4)
    assert first_probe == unconfirmed.index(4) < 8
    # Confirmed: width 4 from its first fast probe on (three samples make the median), leaving it
    # only for the periodic re-measurement of a neighbour.
    assert confirmed[first_probe : first_probe + 8] == [4] * 8, confirmed
    assert confirmed.count(8) <= first_probe + 40 // 8, confirmed
    # Unconfirmed: back to width 8 after the probe, and still there 30 steps later.
    assert unconfirmed[first_probe + 1] == 8
    assert unconfirmed.count(8) > 30, unconfirmed


def test_a_probe_that_is_not_faster_is_not_repeated():
    policy = policy_with(cpu_like_seconds(1), bs=1, accepted_fraction=0.0, explore_every=8)
    seconds = cpu_like_seconds(1)
    chosen = []
    for _ in range(16):
        width = policy.choose(1)
        chosen.append(width)
        observe(policy, 1, width, seconds[width], [0] if width > 1 else None)
    assert chosen.count(4) == 2, chosen  # one probe per explore_every steps, none repeated


def test_confirm_promising_must_be_a_boolean():
    with pytest.raises(ValueError, match="confirm_promising is 'yes'; expected true or false"):
        AdaptiveConfig(confirm_promising="yes")
    assert AdaptiveConfig.from_dict({"confirm_promising": False}).confirm_promising is False
