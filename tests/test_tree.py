"""Token-tree verification (sglang_dflash.tree): the tree, its greedy walk, its fit, and the reference
decoder and replay with a tree (lossless: the target's greedy output; replay = decode)."""

import json
from types import SimpleNamespace

import pytest
import torch

from sglang_dflash import SamplingParams, load_drafter, reference, spec_generate
from sglang_dflash import tree as tree_module
from sglang_dflash.serving.tree_verify import (
    DEFAULT_LOOKUP_MAX_ROWS,
    DEFAULT_PROMPT_LOOKUP,
    DEFAULT_TREE_MAX_ROWS,
    LOOKUP_BY_PROPOSAL_ENV,
    LOOKUP_MAX_ROWS_ENV,
    PROMPT_LOOKUP_ENV,
    TREE_FIRST_DEPTH_ENV,
    TREE_MAX_ROWS_ENV,
    VERIFY_TREE_ENV,
    WIDE_TREE_ENV,
    NodeArgmax,
    ServedTree,
    TreeWalk,
    VerifyTrees,
    commit_path_slots,
    lookup_by_proposal_setting,
    lookup_max_rows_setting,
    names_tree_file,
    path_order,
    plan_tree_walk,
    prompt_lookup_setting,
    request_contexts,
    tree_first_pass_nodes,
    tree_max_requests,
    tree_max_rows,
    tree_step_applies,
    verify_tree_setting,
    walk_lm_head_rows,
    wide_batch_tree_setting,
    with_lookup_branch,
)
from sglang_dflash.speculative import BatchSampling
from sglang_dflash.testing import make_tiny_drafter
from sglang_dflash.train.acceptance import block_ranks, replay_spec
from sglang_dflash.tree import (
    TREE_FILE,
    WIDE_TREE_FILE,
    DraftTree,
    accepted_depth,
    fit_tree,
    load_tree,
    save_tree,
)

# Root 0; node 1 = rank 0 at position 1, node 2 = rank 1 at position 1, node 3 = rank 0 under node 1.
FORK = DraftTree(parents=(0, 0, 1), ranks=(0, 1, 0))


def test_a_chain_is_each_positions_top_draft_after_the_one_before():
    chain = DraftTree.chain(3)
    assert chain.parents == (0, 1, 2) and chain.ranks == (0, 0, 0)
    assert chain.depths == [0, 1, 2, 3] and chain.is_chain() and not FORK.is_chain()
    assert torch.equal(chain.ancestor_mask(), torch.tril(torch.ones(4, 4, dtype=torch.bool)))


def test_the_ancestor_mask_lets_each_node_see_its_ancestors_and_itself_only():
    expected = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 1]], dtype=torch.bool)
    assert torch.equal(FORK.ancestor_mask(), expected)
    assert FORK.depths == [0, 1, 1, 2] and FORK.max_depth == 2 and FORK.num_nodes == 4


def test_paths_round_trip_through_from_paths_and_json(tmp_path):
    assert FORK.paths() == [(), (0,), (1,), (0, 0)]
    assert DraftTree.from_paths([(0,), (0, 0), (1,)]) == FORK  # ordered by depth
    path = str(tmp_path / "tree.json")
    save_tree(FORK, path, note="x")
    assert load_tree(path) == FORK
    assert json.load(open(path))["note"] == "x"


@pytest.mark.parametrize(
    "parents, ranks, named",
    [
        ((0, 2), (0, 0), "node 2 has parent 2"),
        ((0, 0), (1, 1), "node 2 has parent 0 and rank 1"),
        ((), (), "0 parents"),
    ],
)
def test_a_malformed_tree_is_refused_naming_the_node(parents, ranks, named):
    with pytest.raises(ValueError, match=named):
        DraftTree(parents, ranks)


def test_paths_without_their_prefix_and_unreadable_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        DraftTree.from_paths([(0,), (0, 1, 0), (0, 1)][1:])
    bad = tmp_path / "bad.json"
    bad.write_text('{"parents": [0]}')
    with pytest.raises(ValueError, match="bad.json.*'parents' and 'ranks'"):
        load_tree(str(bad))


def test_a_tree_deeper_than_the_block_is_refused():
    DraftTree.chain(3).check_block(4)
    with pytest.raises(ValueError, match="depth 4; expected <= 3"):
        DraftTree.chain(4).check_block(4)


def test_node_tokens_are_the_ranked_drafts_of_their_positions():
    logits = torch.tensor([[[0.0, 3.0, 2.0, 1.0], [5.0, 0.0, 4.0, 1.0]]])  # positions 1, 2
    assert FORK.draft_tokens(logits).tolist() == [[1, 2, 0]]  # pos1 rank0, pos1 rank1, pos2 rank0


def one_hot_logits(argmax_per_node: list[list[int]], vocab: int = 8) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(argmax_per_node), vocab).float()


@pytest.mark.parametrize(
    "nodes, argmax, on_path, correct, emitted",
    [
        # the target's token after the root is node 1's, after node 1 node 3's: all three taken
        ([5, 1, 2, 3], [1, 3, 7, 6], [1, 1, 0, 1], 2, [1, 3, 6]),
        # node 1 is wrong, its sibling node 2 right: one draft, then the target's token after node 2
        ([5, 1, 2, 3], [2, 0, 4, 0], [1, 0, 1, 0], 1, [2, 4, 4]),
        # no child drafts the target's token: the bonus token alone
        ([5, 1, 2, 3], [6, 0, 0, 0], [1, 0, 0, 0], 0, [6, 6, 6]),
    ],
)
def test_the_greedy_walk_takes_the_child_drafting_the_targets_argmax(
    nodes, argmax, on_path, correct, emitted
):
    path, num_correct, out = FORK.greedy_accept(torch.tensor([nodes]), one_hot_logits([argmax]))
    assert path.int().tolist() == [on_path] and num_correct.tolist() == [correct]
    assert out.tolist() == [emitted]


def test_a_lookup_branch_is_a_chain_from_the_root_one_rank_past_the_trees():
    tree = FORK.with_lookup(2)
    assert tree.parents == (0, 0, 1, 0, 4) and tree.ranks == (0, 1, 0, 2, 2) and tree.lookup == 2
    assert tree.num_nodes == 6 and tree.depths == [0, 1, 1, 2, 1, 2] and not tree.is_chain()
    assert DraftTree.from_json(json.loads(json.dumps(tree.to_json()))) == tree
    assert FORK.with_lookup(0) == FORK
    assert "lookup" not in FORK.to_json()  # tree files without a branch read as before
    with pytest.raises(ValueError, match="has a lookup branch of 2 nodes already"):
        tree.with_lookup(1)
    assert tree.with_lookup(0) == tree  # eval-tau --tree of a file with its own branch, no --prompt-lookup
    assert tree.cut_lookup(2) is tree and tree.cut_lookup(0) == FORK
    assert tree.cut_lookup(1) == FORK.with_lookup(1)
    with pytest.raises(ValueError, match=r"cut_lookup: num_nodes is 3; expected 0 .. 2"):
        tree.cut_lookup(3)


@pytest.mark.parametrize(
    "parents, ranks, lookup",
    [
        ((0, 0, 1, 0, 4), (0, 1, 0, 2, 2), 3),  # node 3 is no branch node
        ((0, 0, 1, 0, 4), (0, 1, 0, 3, 3), 2),  # the branch drafts a rank other than one past theirs
        ((0, 0, 1, 1, 4), (0, 1, 0, 2, 2), 2),  # the branch does not start at the root
        ((0, 0), (0, 1), 3),  # more branch nodes than nodes
    ],
)
def test_a_malformed_lookup_branch_is_refused(parents, ranks, lookup):
    with pytest.raises(ValueError, match=f"DraftTree: lookup {lookup}"):
        DraftTree(parents, ranks, lookup)


def test_lookup_nodes_take_the_proposals_and_keep_the_drafters_tokens_where_there_are_none():
    tree = FORK.with_lookup(2)
    drafts = torch.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]])
    placed = tree.place_lookup(drafts, torch.tensor([[7, 8], [9, -1]]))
    assert placed.tolist() == [[1, 2, 3, 7, 8], [1, 2, 3, 9, 5]] and drafts[0, 3] == 4
    assert FORK.place_lookup(drafts[:, :3], torch.zeros(2, 0, dtype=torch.long)) is not None


@pytest.mark.parametrize("tensor_walk", [True, False])
def test_a_lookup_node_repeating_a_drafter_siblings_token_is_the_one_walked(tensor_walk):
    """Node 4 (the branch) drafts node 1's token: the walk goes into the branch, whose node 5 is
    right where node 1's child (node 3) is not."""
    tree = FORK.with_lookup(2)
    nodes = torch.tensor([[5, 1, 2, 3, 1, 6]])
    argmax = torch.tensor([[1, 4, 0, 0, 6, 7]])  # after the root 1; after node 4 6; after node 5 7
    if tensor_walk:
        on_path, correct, emitted = tree.greedy_accept_argmax(nodes, argmax)
    else:
        on_path, correct, emitted = tree.greedy_walk(nodes, lambda requests, at: argmax[requests, at])
    assert on_path.int().tolist() == [[1, 0, 0, 0, 1, 1]] and correct.tolist() == [2]
    assert emitted.tolist() == [[1, 6, 7]]


def random_tree(generator: torch.Generator, num_drafts: int) -> DraftTree:
    """A tree of ``num_drafts`` nodes, each under a random earlier node with that parent's next rank."""
    parents, ranks, used = [], [], [0] * (num_drafts + 1)
    for node in range(1, num_drafts + 1):
        parent = int(torch.randint(node, (1,), generator=generator))
        parents.append(parent)
        ranks.append(used[parent])
        used[parent] += 1
    return DraftTree(tuple(parents), tuple(ranks))


@pytest.mark.parametrize("seed", range(6))
def test_the_tensor_walk_commits_what_the_node_by_node_walk_does(seed):
    """Random trees and blocks whose nodes often draft the target's token (a few vocabulary ids),
    so that walks go deep, stop at every depth and take second ranks."""
    g = torch.Generator().manual_seed(seed)
    tree = random_tree(g, num_drafts=int(torch.randint(1, 16, (1,), generator=g)))
    bs, vocab = 64, 3
    nodes = torch.randint(vocab, (bs, tree.num_nodes), generator=g)
    argmax = torch.randint(vocab, (bs, tree.num_nodes), generator=g)
    for parent in set(tree.parents):  # siblings draft distinct tokens, as tree.draft_tokens gives them
        siblings = [child for child, p in enumerate(tree.parents, start=1) if p == parent]
        nodes[:, siblings] = torch.stack(
            [torch.randperm(max(vocab, len(siblings)), generator=g) for _ in range(bs)]
        )[:, : len(siblings)]
    walked = tree.greedy_walk(nodes, lambda requests, at: argmax[requests, at])
    vectorised = tree.greedy_accept_argmax(nodes, argmax)
    for got, want in zip(vectorised, walked, strict=True):
        assert torch.equal(got, want)
    assert walked[1].max() >= 1 or tree.max_depth == 0


def test_accepted_depth_follows_the_ranks_through_the_tree():
    assert accepted_depth([0, 0, 5], FORK) == 2
    assert accepted_depth([1, 0], FORK) == 1  # node 2 has no child
    assert accepted_depth([2, 0], FORK) == 0
    assert accepted_depth([0, -1], FORK) == 1  # past the response's end


def test_fit_tree_keeps_the_most_frequent_rank_paths():
    rows = [[0, 0, 0]] * 5 + [[1, 0, 3]] * 4 + [[0, 1, 0]] * 2 + [[2, 9, 9]]
    tree = fit_tree(rows, num_drafts=4, max_rank=8)
    # counts: (0,) 7, (0,0) 5, (0,0,0) 5, (1,) 4, (1,0) 4, (0,1) 2 ...: the first four, shorter first
    assert set(tree.paths()[1:]) == {(0,), (0, 0), (1,), (0, 0, 0)}
    # ranks past max_rank end a path; the expected accepted length over the rows is the best of any tree
    assert sum(accepted_depth(r, tree) for r in rows) == 5 * 3 + 4 + 2
    assert fit_tree([], num_drafts=3).is_chain()  # no data: the chain


@pytest.fixture(scope="module")
def setup(tiny_corpus, tiny_trained):
    target, _, records = tiny_corpus
    drafter = load_drafter(str(tiny_trained[0]), target_config=target.config)
    prompts = [r["input_ids"][: r["loss_start"]] for r in records[:12]]  # trained on: long accepted runs
    return target, drafter, prompts


@pytest.fixture(scope="module")
def fitted(setup):
    """A 5-draft tree fitted on prompts 8-11 of the setup, by their ranks (the chain and branches)."""
    target, drafter, prompts = setup
    params = SamplingParams(max_new_tokens=24)
    responses = spec_generate(target, drafter, prompts[8:], params).token_ids
    rows = [r for p, s in zip(prompts[8:], responses) for r in block_ranks(target, drafter, p, s, 4).tolist()]
    return fit_tree(rows, num_drafts=5, max_rank=4)


def test_the_fitted_tree_branches(fitted):
    assert fitted.num_nodes == 6 and len(set(fitted.parents)) < 5  # some node has two children


def test_tree_decoding_is_the_targets_greedy_output(setup, fitted):
    target, drafter, prompts = setup
    params = SamplingParams(max_new_tokens=24)
    chain = spec_generate(target, drafter, prompts[:8], params)
    tree = spec_generate(target, drafter, prompts[:8], params, tree=fitted)
    assert tree.token_ids == chain.token_ids
    assert tree.accept_lens != chain.accept_lens  # the tree accepted differently somewhere
    assert max(max(a) for a in tree.accept_lens) >= 3


def test_a_lookup_branch_decodes_the_targets_greedy_output_in_fewer_steps(setup, fitted):
    """The tiny target's greedy responses repeat themselves, a random drafter's drafts do not: the
    branch's proposals are taken."""
    target, drafter, prompts = setup
    drafter = make_tiny_drafter(
        target.config, seed=3, num_layers=2, target_layer_ids=list(drafter.config.target_layer_ids)
    )
    params = SamplingParams(max_new_tokens=40)
    plain = spec_generate(target, drafter, prompts[:8], params, tree=fitted)
    lookup = spec_generate(target, drafter, prompts[:8], params, tree=fitted.with_lookup(3))
    assert lookup.token_ids == plain.token_ids
    assert sum(map(len, lookup.accept_lens)) < sum(map(len, plain.accept_lens))


def test_a_chain_tree_decodes_as_the_chain(setup):
    target, drafter, prompts = setup
    params = SamplingParams(max_new_tokens=24)
    chain = spec_generate(target, drafter, prompts[:8], params)
    as_tree = spec_generate(
        target, drafter, prompts[:8], params, tree=DraftTree.chain(drafter.block_size - 1)
    )
    assert as_tree.token_ids == chain.token_ids and as_tree.accept_lens == chain.accept_lens


@pytest.mark.parametrize("lookup", [0, 3])
@pytest.mark.parametrize("which", ["trained", "random"])
def test_replayed_tree_steps_equal_the_tree_decoders(setup, fitted, which, lookup):
    target, drafter, prompts = setup
    fitted = fitted.with_lookup(lookup)
    if which == "random":
        drafter = make_tiny_drafter(
            target.config, seed=3, num_layers=2, target_layer_ids=list(drafter.config.target_layer_ids)
        )
    tokens = spec_generate(target, drafter, prompts[:6], SamplingParams(max_new_tokens=40)).token_ids
    stop = max(set(t for row in tokens for t in row[4:12]), key=lambda t: sum(row.count(t) for row in tokens))
    params = SamplingParams(max_new_tokens=24, stop_token_ids=(stop,))
    if lookup:  # a step's branch is its batch's best proposal's: a replay is each request alone
        alone = [spec_generate(target, drafter, [p], params, tree=fitted) for p in prompts[:8]]
        tokens, accept_lens = [a.token_ids[0] for a in alone], [a.accept_lens[0] for a in alone]
    else:
        decoded = spec_generate(target, drafter, prompts[:8], params, tree=fitted)
        tokens, accept_lens = decoded.token_ids, decoded.accept_lens
    replayed = replay_spec(target, drafter, prompts[:8], tokens, params, tree=fitted)
    assert replayed.accept_lens == accept_lens


def test_a_decoders_lookup_branch_is_cut_each_step_to_its_best_proposal(setup, fitted, monkeypatch):
    """Steps whose requests have no proposal verify the tree alone; the others its whole branch."""
    target, drafter, prompts = setup
    verified = []
    step = reference._tree_step

    def recording_step(target, drafter, tree, *args):
        verified.append(tree.lookup)
        return step(target, drafter, tree, *args)

    monkeypatch.setattr(reference, "_tree_step", recording_step)
    spec_generate(target, drafter, prompts[:1], SamplingParams(max_new_tokens=40), tree=fitted.with_lookup(3))
    assert set(verified) == {0, 3}, verified


def test_block_ranks_give_the_chains_runs_of_zeros(setup):
    target, drafter, prompts = setup
    response = spec_generate(target, drafter, prompts[:1], SamplingParams(max_new_tokens=24)).token_ids[0]
    ranks = block_ranks(target, drafter, prompts[0], response, max_rank=4)
    hits = replay_spec(
        target, drafter, prompts[:1], [response], SamplingParams(max_new_tokens=24)
    ).block_hits[0]
    chain = DraftTree.chain(drafter.block_size - 1)
    assert ranks.shape == (len(response) - 1, drafter.block_size - 1)
    assert [accepted_depth(r, chain) for r in ranks.tolist()] == hits


@pytest.mark.parametrize("params", [SamplingParams(repetition_penalty=1.2), SamplingParams(min_new_tokens=3)])
def test_tree_decoding_refuses_penalised_rows(setup, params):
    target, drafter, prompts = setup
    with pytest.raises(
        ValueError, match=r"rows \[0, 1\] carry penalties; tree verification does not apply them"
    ):
        spec_generate(target, drafter, prompts[:2], params, tree=DraftTree.chain(2))


def test_a_seeded_sampled_row_decodes_the_same_tokens_whatever_the_tree_drafter_or_batch(setup, fitted):
    """A sampled row commits the target's draw after each node (its position's seeded uniform), so its
    tokens do not depend on the drafts: the fitted tree, a chain, a random drafter, alone or in a
    batch all give one output, its plain seeded sampling's."""
    target, drafter, prompts = setup
    seeded = SamplingParams(temperature=0.8, top_p=0.95, max_new_tokens=24, seed=7)
    other = make_tiny_drafter(
        target.config, seed=3, num_layers=2, target_layer_ids=list(drafter.config.target_layer_ids)
    )
    fitted_run = spec_generate(target, drafter, prompts[:3], seeded, tree=fitted)
    chain_tree = spec_generate(
        target, drafter, prompts[:3], seeded, tree=DraftTree.chain(drafter.block_size - 1)
    )
    random_run = spec_generate(target, other, prompts[:3], seeded, tree=fitted)
    alone = spec_generate(target, drafter, prompts[1:2], seeded, tree=fitted)
    assert fitted_run.token_ids == chain_tree.token_ids == random_run.token_ids
    assert alone.token_ids[0] == fitted_run.token_ids[1]
    assert fitted_run.accept_lens != random_run.accept_lens  # the trained drafts were taken more often
    assert max(max(a) for a in fitted_run.accept_lens) >= 3
    greedy = spec_generate(target, drafter, prompts[:3], SamplingParams(max_new_tokens=24))
    assert fitted_run.token_ids != greedy.token_ids  # it did sample


def test_a_mixed_batch_keeps_its_greedy_rows_greedy(setup, fitted):
    target, drafter, prompts = setup
    greedy = SamplingParams(max_new_tokens=24)
    sampled = SamplingParams(temperature=1.0, max_new_tokens=24)
    mixed = spec_generate(
        target, drafter, prompts[:4], [greedy, sampled, greedy, sampled], tree=fitted,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    alone = spec_generate(target, drafter, prompts[:4], greedy)
    assert [mixed.token_ids[i] for i in (0, 2)] == [alone.token_ids[i] for i in (0, 2)]


def walk_every_node_drawn(nodes, logits, sampling, generator):
    """The GPU's sampled walk: every node's draw, then the tensor walk."""
    return FORK.greedy_accept_argmax(nodes, FORK.target_tokens(logits, sampling, generator))


def walk_drawing_when_reached(nodes, logits, sampling, generator):
    """The CPU's sampled walk: a node draws when the walk reaches it."""
    return FORK.sampled_walk(nodes, logits, sampling, generator)


@pytest.mark.parametrize("walk", [walk_every_node_drawn, walk_drawing_when_reached])
def test_the_sampled_walk_commits_the_targets_distribution_at_every_node(walk):
    """FORK's root drafts tokens 0 and 1 (nodes 1, 2), node 1 drafts 0 (node 3): the first committed
    token follows the root's distribution, the second the distribution of the node the first
    token reached (node 1 or 2), or is missing where the first was not drafted (the step ends)."""
    probs = torch.tensor([[0.5, 0.3, 0.2], [0.6, 0.1, 0.3], [0.2, 0.2, 0.6], [1 / 3, 1 / 3, 1 / 3]])
    trials = 40_000
    nodes = torch.tensor([[2, 0, 1, 0]]).expand(trials, -1)
    logits = probs.log()[None].expand(trials, -1, -1)
    sampling = BatchSampling.from_params([SamplingParams(temperature=1.0)] * trials)
    _, correct, emitted = walk(nodes, logits, sampling, torch.Generator().manual_seed(0))
    first = torch.bincount(emitted[:, 0], minlength=3).float() / trials
    assert torch.allclose(first, probs[0], atol=0.01)
    for token, node in ((0, 1), (1, 2)):  # the root drafts 0 at node 1 and 1 at node 2
        reached = emitted[:, 0] == token
        assert bool((correct[reached] >= 1).all()) and bool(
            (correct[~reached & (emitted[:, 0] == 2)] == 0).all()
        )
        second = torch.bincount(emitted[reached, 1], minlength=3).float() / int(reached.sum())
        assert torch.allclose(second, probs[node], atol=0.015), (token, second)


def test_the_cpu_sampled_walk_draws_at_the_nodes_it_reaches_only(monkeypatch):
    """Each request draws once per node on its walked path (its accepted drafts and the root), and
    never at a node the walk did not reach; greedy rows of the batch commit their argmax."""
    drawn_rows = []
    real_draft_tokens = tree_module.draft_tokens

    def counting(logits, *args):
        drawn_rows.append(logits.shape[0])
        return real_draft_tokens(logits, *args)

    monkeypatch.setattr(tree_module, "draft_tokens", counting)
    bs = 64
    generator = torch.Generator().manual_seed(1)
    logits = torch.randn(bs, 4, 3, generator=generator)
    nodes = torch.tensor([[2, 0, 1, 0]]).expand(bs, -1)
    params = [SamplingParams(temperature=0.0 if row % 4 == 0 else 1.0) for row in range(bs)]
    on_path, correct, emitted = FORK.sampled_walk(nodes, logits, BatchSampling.from_params(params), generator)
    assert sum(drawn_rows) == int((correct + 1).sum()) < bs * FORK.num_nodes
    assert bool(on_path.sum(1).eq(correct + 1).all())
    greedy_rows = torch.arange(0, bs, 4)
    expected = FORK.greedy_accept(nodes[greedy_rows], logits[greedy_rows])
    for got, want in zip((on_path, correct, emitted), expected, strict=True):
        assert torch.equal(got[greedy_rows], want)


def test_the_cpu_sampled_walk_refuses_seeded_rows():
    sampling = BatchSampling.from_params([SamplingParams(temperature=1.0, seed=3)])
    with pytest.raises(ValueError, match="unseeded rows only"):
        FORK.sampled_walk(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 4, 3), sampling)


# ----------------------------------------------------------------------------- serving settings
def server_args(tmp_path, backend="torch_native", tp_size=1):
    return SimpleNamespace(
        speculative_draft_model_path=str(tmp_path), attention_backend=backend, tp_size=tp_size
    )


def test_the_verify_tree_setting_is_the_drafters_tree_unless_off(tmp_path, monkeypatch):
    monkeypatch.delenv(VERIFY_TREE_ENV, raising=False)  # the default: auto
    assert verify_tree_setting(server_args(tmp_path), 16, "cpu") is None  # the drafter has no tree file
    save_tree(FORK, str(tmp_path / TREE_FILE))
    assert verify_tree_setting(server_args(tmp_path), 16, "cpu") == FORK
    monkeypatch.setenv(VERIFY_TREE_ENV, "off")
    assert verify_tree_setting(server_args(tmp_path), 16, "cpu") is None
    monkeypatch.setenv(VERIFY_TREE_ENV, "auto")
    assert verify_tree_setting(server_args(tmp_path), 16, "cpu") == FORK
    monkeypatch.setenv(VERIFY_TREE_ENV, str(tmp_path / TREE_FILE))
    assert verify_tree_setting(server_args(tmp_path), 4, "cpu") == FORK


def test_the_lookup_setting_defaults_to_eight_nodes_and_refuses_what_is_no_count(monkeypatch):
    monkeypatch.delenv(PROMPT_LOOKUP_ENV, raising=False)
    assert prompt_lookup_setting() == DEFAULT_PROMPT_LOOKUP == 8
    monkeypatch.setenv(PROMPT_LOOKUP_ENV, " 0 ")
    assert prompt_lookup_setting() == 0
    monkeypatch.setenv(PROMPT_LOOKUP_ENV, "40")  # more than a block holds: served cut to what it holds
    assert prompt_lookup_setting() == 40
    for bad in ("-1", "eight", "1.5"):
        monkeypatch.setenv(PROMPT_LOOKUP_ENV, bad)
        with pytest.raises(ValueError, match=f"{PROMPT_LOOKUP_ENV} is '{bad}'; expected a whole number >= 0"):
            prompt_lookup_setting()


def test_a_served_trees_lookup_branch_fits_the_blocks_slots(caplog):
    assert with_lookup_branch(FORK, 8, 16) == FORK.with_lookup(8)
    with caplog.at_level("INFO"):
        assert with_lookup_branch(FORK, 8, 8) == FORK.with_lookup(4)  # 4 nodes + 4 = the block
    assert "a lookup branch of 4 nodes (of SGLANG_DFLASH_PROMPT_LOOKUP=8)" in caplog.text
    full = DraftTree.chain(15)
    assert with_lookup_branch(full, 8, 16) == full and with_lookup_branch(None, 8, 16) is None
    assert with_lookup_branch(FORK, 0, 16) == FORK
    # A tree file with a branch of its own keeps it.
    assert with_lookup_branch(FORK.with_lookup(2), 8, 16) == FORK.with_lookup(2)


def test_a_requests_lookup_context_is_its_prompt_and_committed_tokens():
    batch = SimpleNamespace(
        reqs=[
            SimpleNamespace(rid="a", origin_input_ids=[1, 2], output_ids=[3]),
            SimpleNamespace(rid="b", origin_input_ids=[4], output_ids=[]),
        ]
    )
    assert request_contexts(batch) == [("a", [1, 2, 3]), ("b", [4])]


def test_only_a_value_that_is_neither_off_nor_auto_names_a_tree_file(monkeypatch):
    from sglang_dflash.serving.plugin import names_a_verify_tree

    assert [names_tree_file(v) for v in ("", "off", "auto", "/x/tree.json")] == [False, False, False, True]
    monkeypatch.setenv(VERIFY_TREE_ENV, " off ")  # read as the worker reads it: stripped
    assert not names_a_verify_tree()  # a GPU server arms no tree mask
    monkeypatch.setenv(VERIFY_TREE_ENV, "/x/tree.json")
    assert names_a_verify_tree()


# A 3-node tree: what a wide batch verifies beside FORK.
SMALL = DraftTree(parents=(0, 0), ranks=(0, 1))


def test_the_wide_batch_tree_is_the_drafters_beside_a_verify_tree_on_cpu(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv(WIDE_TREE_ENV, raising=False)  # the default: auto
    caplog.set_level("INFO")  # a default's reasons are logged at info
    args = server_args(tmp_path)
    assert wide_batch_tree_setting(args, 16, "cpu", FORK) is None  # the drafter has no such file
    save_tree(SMALL, str(tmp_path / WIDE_TREE_FILE))
    assert wide_batch_tree_setting(args, 16, "cpu", FORK) == SMALL
    assert wide_batch_tree_setting(args, 16, "cpu", None) is None  # no verify tree: the chain
    assert wide_batch_tree_setting(server_args(tmp_path, backend="triton"), 16, "cuda", FORK) is None
    assert "wide-batch tree" in caplog.text and "device cuda; expected CPU" in caplog.text
    monkeypatch.setenv(WIDE_TREE_ENV, "off")
    assert wide_batch_tree_setting(args, 16, "cpu", FORK) is None
    monkeypatch.setenv(WIDE_TREE_ENV, str(tmp_path / WIDE_TREE_FILE))
    assert wide_batch_tree_setting(args, 16, "cpu", FORK) == SMALL


@pytest.mark.parametrize(
    "named_tree, verify_tree, device, named",
    [
        ("absent.json", FORK, "cpu", "absent.json'; expected 'off', 'auto' or a tree JSON file"),
        (WIDE_TREE_FILE, None, "cpu", "but no verify tree is served; expected one beside it"),
        (WIDE_TREE_FILE, SMALL, "cpu", "3 nodes; expected fewer than the verify tree's 3"),
        (WIDE_TREE_FILE, FORK, "cuda", "device cuda; expected CPU"),
    ],
)
def test_a_wide_batch_tree_the_server_cannot_run_is_refused_naming_why(
    tmp_path, monkeypatch, named_tree, verify_tree, device, named
):
    save_tree(SMALL, str(tmp_path / WIDE_TREE_FILE))
    monkeypatch.setenv(WIDE_TREE_ENV, str(tmp_path / named_tree))
    with pytest.raises(ValueError, match=named):
        wide_batch_tree_setting(server_args(tmp_path), 16, device, verify_tree)


@pytest.mark.parametrize(
    "args, block, device, named",
    [
        ({}, 3, "cpu", "4 nodes; expected <= the block size 3"),
        ({"backend": "triton"}, 16, "cpu", "attention backend triton on cpu"),
        ({}, 16, "cuda", "attention backend torch_native on cuda"),
        ({"backend": "triton"}, 16, "cuda", "4 nodes on cuda; expected the block size 16 on a GPU"),
        ({"tp_size": 2}, 16, "cpu", "tp size 2; expected 1"),
    ],
)
def test_a_verify_tree_the_server_cannot_run_is_refused_naming_why(
    tmp_path, monkeypatch, args, block, device, named
):
    save_tree(FORK, str(tmp_path / TREE_FILE))
    monkeypatch.setenv(VERIFY_TREE_ENV, str(tmp_path / TREE_FILE))
    with pytest.raises(ValueError, match=named):
        verify_tree_setting(server_args(tmp_path, **args), block, device)


def test_auto_verifies_the_chain_where_the_drafters_tree_cannot_run(tmp_path, monkeypatch, caplog):
    save_tree(FORK, str(tmp_path / TREE_FILE))
    monkeypatch.setenv(VERIFY_TREE_ENV, "auto")
    assert verify_tree_setting(server_args(tmp_path, backend="triton"), 16, "cuda") is None
    assert verify_tree_setting(server_args(tmp_path), 16, "cpu", selector=True) is None
    assert "not used (4 nodes on cuda; expected the block size 16" in caplog.text and "DFlash2" in caplog.text
    monkeypatch.setenv(VERIFY_TREE_ENV, str(tmp_path / TREE_FILE))
    with pytest.raises(ValueError, match="a DFlash2 drafter chooses its drafts by its selector"):
        verify_tree_setting(server_args(tmp_path), 16, "cpu", selector=True)


def test_a_gpu_verifies_a_named_tree_of_the_blocks_width_with_the_split_kv_kernel(
    tmp_path, monkeypatch, caplog
):
    full = DraftTree.chain(15)  # 16 nodes: the block's width, what the verify's CUDA graphs take
    save_tree(full, str(tmp_path / TREE_FILE))
    monkeypatch.setenv(VERIFY_TREE_ENV, str(tmp_path / TREE_FILE))
    assert verify_tree_setting(server_args(tmp_path, backend="triton"), 16, "cuda") == full
    monkeypatch.setenv(VERIFY_TREE_ENV, "auto")  # not measured on a GPU: the chain unless named
    assert verify_tree_setting(server_args(tmp_path, backend="triton"), 16, "cuda") is None
    assert "not measured on cuda yet: name the tree file" in caplog.text
    monkeypatch.setenv(VERIFY_TREE_ENV, str(tmp_path / TREE_FILE))
    monkeypatch.setenv("SGLANG_DFLASH_SPLITKV", "0")
    with pytest.raises(ValueError, match="triton on cuda without the split-KV kernel"):
        verify_tree_setting(server_args(tmp_path, backend="triton"), 16, "cuda")


def test_a_gpu_tree_is_refused_where_a_target_pass_would_attend_causally(monkeypatch):
    """No block mask armed (the split-KV kernel is off), or target attention the kernel leaves to
    SGLang's causal kernel: the server stops at worker start naming it."""
    from sglang.srt.layers.radix_attention import RadixAttention

    from sglang_dflash.kernels.block_attention import BlockMasks
    from sglang_dflash.serving.tree_verify import check_gpu_tree_target

    monkeypatch.setattr(BlockMasks, "held", {})
    layers = torch.nn.ModuleList([RadixAttention(4, 16, 0.25, 2, i) for i in range(3)])
    backend = SimpleNamespace(enable_deterministic=False, dcp_size=1)
    runner = SimpleNamespace(model=layers, attn_backend=backend)
    with pytest.raises(ValueError, match="no block mask armed at width 16; expected the split-KV kernel's"):
        check_gpu_tree_target(runner, "cpu", 16)
    BlockMasks.arm("cpu", 16)
    check_gpu_tree_target(runner, "cpu", 16)  # full attention, nothing scaled: served
    layers.append(RadixAttention(4, 16, 0.25, 2, 3, sliding_window_size=64))
    layers.append(RadixAttention(4, 16, 0.25, 2, 4, logit_cap=30.0))
    backend.enable_deterministic = True
    with pytest.raises(ValueError, match="the deterministic backend, 3, 4 run SGLang's causal kernel"):
        check_gpu_tree_target(runner, "cpu", 16)


def test_a_tree_step_takes_at_most_the_row_budget(monkeypatch):
    """Requests x nodes <= SGLANG_DFLASH_TREE_MAX_ROWS (default 8 for greedy steps on CPU, none on a
    GPU or for steps with sampled rows; never under the tree's nodes)."""
    eight = DraftTree.from_paths([(0,), (1,), (0, 0), (0, 1), (0, 0, 0), (0, 0, 1), (0, 0, 0, 0)])
    sixteen = DraftTree.chain(15)
    monkeypatch.delenv(TREE_MAX_ROWS_ENV, raising=False)
    assert tree_max_rows(eight) == DEFAULT_TREE_MAX_ROWS == 8 and tree_max_rows(sixteen) == 16
    assert tree_max_rows(FORK) == 8  # a 4-node tree: two requests
    assert tree_max_rows(sixteen, "cuda") is None  # a GPU's tree takes the chain's rows: no limit
    assert tree_max_rows(eight, "cpu", sampled=True) is None  # the sampled chain is dearer: no limit
    assert tree_max_requests(eight, "cpu", False) == 1 and tree_max_requests(eight, "cpu", True) is None
    # Beside a wide-batch tree, sampled steps past the budget verify that tree: the same budget.
    assert tree_max_rows(eight, "cpu", sampled=True, wide=True) == 8
    assert tree_max_requests(eight, "cpu", True, wide=True) == 1
    assert tree_max_requests(None, "cpu", True) == 0
    monkeypatch.setenv(TREE_MAX_ROWS_ENV, "64")
    assert tree_max_rows(eight) == 64 and tree_max_rows(sixteen, "cuda") == 64
    assert tree_max_requests(eight, "cpu", True) == 8
    monkeypatch.setenv(TREE_MAX_ROWS_ENV, "0")
    with pytest.raises(ValueError, match="SGLANG_DFLASH_TREE_MAX_ROWS is '0'; expected a whole number >= 1"):
        tree_max_rows(eight)


def test_a_tree_steps_walk_follows_the_device_the_rows_and_the_deferred_lm_head():
    eight = DraftTree.from_paths([(0,), (1,), (0, 0), (0, 1), (0, 0, 0), (0, 0, 1), (0, 0, 0, 0)])
    served = ServedTree.on(eight, "cpu")  # one pass: split = 8 nodes
    cpu_greedy = dict(on_gpu=False, sampled=False, deferred=True, can_split=True, few_rows=True)
    # One request: the first lm_head call would score all 8 nodes anyway.
    plan = plan_tree_walk(served, 1, **cpu_greedy)
    assert (plan.walk, plan.split, plan.cheap_rows) == (TreeWalk.AT_ONCE, 8, 8)
    # Sixteen requests: the lm_head where the walk goes, 16 rows a call.
    plan = plan_tree_walk(served, 16, **cpu_greedy)
    assert (plan.walk, plan.split, plan.cheap_rows) == (TreeWalk.NODE_ARGMAX, 8, 16)
    assert plan_tree_walk(served, 2, **(cpu_greedy | {"few_rows": False})).cheap_rows == 1  # F.linear
    # A first pass to depth 2 (4 nodes), when the batch may take a second pass.
    two_passes = ServedTree(eight, served.mask, split=4)
    assert plan_tree_walk(two_passes, 1, **cpu_greedy).walk is TreeWalk.NODE_ARGMAX
    assert plan_tree_walk(two_passes, 1, **cpu_greedy).split == 4
    assert plan_tree_walk(two_passes, 1, **(cpu_greedy | {"can_split": False})).split == 8
    # Every node scored at once: without deferred logits, and on a GPU (greedy or sampled).
    assert plan_tree_walk(served, 16, **(cpu_greedy | {"deferred": False})).walk is TreeWalk.AT_ONCE
    for sampled in (False, True):
        gpu = cpu_greedy | {"on_gpu": True, "sampled": sampled, "deferred": False}
        assert plan_tree_walk(two_passes, 16, **gpu) == plan_tree_walk(served, 16, **gpu)
        assert plan_tree_walk(two_passes, 16, **gpu).walk is TreeWalk.AT_ONCE
    # Sampled rows on CPU: each reached node's draw, from one pass over every node.
    sampled = plan_tree_walk(two_passes, 16, **(cpu_greedy | {"sampled": True, "deferred": False}))
    assert (sampled.walk, sampled.split) == (TreeWalk.DRAWS_WHEN_WALKED, 8)


def test_the_walks_first_lm_head_call_scores_the_whole_first_pass():
    """One request's 8-node tree: one lm_head call of 8 rows instead of one per depth walked."""
    tree = DraftTree.from_paths([(0,), (1,), (0, 0), (0, 1), (0, 0, 0), (0, 0, 1), (0, 0, 0, 0)])
    assert walk_lm_head_rows(1, 8, few_rows=True, cheap_rows=4) == 8
    assert walk_lm_head_rows(1, 2, few_rows=True, cheap_rows=4) == 4  # never under cheap_rows
    assert walk_lm_head_rows(16, 16, few_rows=True, cheap_rows=4) == 16  # about one read of the lm_head
    assert walk_lm_head_rows(2, 8, few_rows=False, cheap_rows=4) == 1  # F.linear: a row a call
    argmax = torch.tensor([[5, 9, 7, 6, 1, 2, 3, 4]])  # the walk: node 0 -> 1 (9) -> 3 (6) -> 5 (2)
    calls: list[int] = []

    def first_pass(rows: torch.Tensor) -> torch.Tensor:
        calls.append(len(rows))
        return argmax.view(-1)[rows]

    def no_second_pass(requests):
        raise AssertionError("one pass: no second pass")

    nodes = torch.tensor([[0, 5, 8, 9, 3, 6, 2, 1]])  # node tokens: node 1 drafts 5, node 3 drafts 9, ...
    argmax_at = NodeArgmax(tree, 1, 8, first_pass, no_second_pass, walk_lm_head_rows(1, 8, True, 4), "cpu")
    on_path, accepted, _ = tree.greedy_walk(nodes, argmax_at)
    assert accepted.tolist() == [3] and calls == [8]


@pytest.mark.parametrize("wide", [None, SMALL])
def test_steps_past_the_budget_verify_the_wide_batch_tree_or_the_chain(monkeypatch, wide):
    """FORK (4 nodes) within the default 8 rows (two requests), the wide-batch tree past them, else
    the chain (None); sampled steps take FORK at any size when no wide-batch tree serves them."""
    monkeypatch.delenv(TREE_MAX_ROWS_ENV, raising=False)
    trees = VerifyTrees(FORK, wide, "cpu")
    for bs, sampled in ((1, False), (2, False), (1, True), (2, True)):
        assert trees.for_step(bs, sampled).tree == FORK
    assert torch.equal(trees.for_step(1, False).mask, FORK.ancestor_mask())
    past = trees.for_step(3, False)
    assert past is None if wide is None else past.tree == SMALL
    assert trees.for_step(64, True).tree == (FORK if wide is None else SMALL)
    assert VerifyTrees(None, None, "cpu").for_step(1, False) is None
    # Off the CPU ("meta" here, a GPU in a server) no budget: the verify tree at any size.
    assert VerifyTrees(FORK, wide, "meta").for_step(64, False).tree == FORK


def test_a_steps_lookup_branch_is_cut_to_the_rows_budget():
    """FORK (4 nodes) for one or two requests, SMALL (3 nodes) past them, each with up to 8 branch
    nodes (the block of 16 holds them), cut where requests x (nodes + branch) would pass 24 rows."""
    trees = VerifyTrees(FORK, SMALL, "cpu", lookup=8, block_size=16, lookup_max_rows=24)
    assert trees.for_step(1, False).tree == FORK.with_lookup(8)  # 12 rows
    assert trees.for_step(2, False).tree == FORK.with_lookup(8)  # 24 rows
    assert trees.for_step(3, False).tree == SMALL.with_lookup(5)  # 3 x 8 rows
    assert trees.for_step(6, False).tree == SMALL.with_lookup(1)  # 6 x 4 rows
    assert trees.for_step(8, False).tree == SMALL and trees.for_step(64, False).tree == SMALL
    served = trees.for_step(3, False)
    assert torch.equal(served.mask, SMALL.with_lookup(5).ancestor_mask())
    # A block without room for a branch, or no branch asked for: the tree as it is.
    assert VerifyTrees(FORK, None, "cpu", lookup=8, block_size=4).for_step(1, False).tree == FORK
    assert VerifyTrees(FORK, None, "cpu", lookup=0).for_step(1, False).tree == FORK
    # A tree file's own branch (the setting does not lengthen it) is cut as any.
    own = FORK.with_lookup(2)
    assert VerifyTrees(own, None, "cpu", lookup=8).for_step(1, False).tree == own
    assert VerifyTrees(own, None, "cpu", lookup=8, lookup_max_rows=1).for_step(1, False).tree == FORK


def test_a_steps_lookup_branch_is_no_longer_than_its_proposals_ask():
    """The branch a step's proposals ask for (Proposals.step_nodes), within the rows budget."""
    trees = VerifyTrees(FORK, SMALL, "cpu", lookup=8, block_size=16, lookup_max_rows=24)
    assert trees.for_step(1, False, wanted_branch=0).tree == FORK
    assert trees.for_step(1, True, wanted_branch=4).tree == FORK.with_lookup(4)
    assert trees.for_step(1, False, wanted_branch=8).tree == FORK.with_lookup(8)
    assert trees.for_step(3, False, wanted_branch=8).tree == SMALL.with_lookup(5)  # the budget's
    assert trees.for_step(3, False, wanted_branch=2).tree == SMALL.with_lookup(2)


def test_a_branch_only_where_a_proposal_is_the_default_and_0_turns_it_off(monkeypatch):
    monkeypatch.delenv(LOOKUP_BY_PROPOSAL_ENV, raising=False)
    assert lookup_by_proposal_setting() is True
    monkeypatch.setenv(LOOKUP_BY_PROPOSAL_ENV, "0")
    assert lookup_by_proposal_setting() is False
    monkeypatch.setenv(LOOKUP_BY_PROPOSAL_ENV, "no")
    with pytest.raises(
        ValueError, match=r"SGLANG_DFLASH_LOOKUP_BY_PROPOSAL is 'no'; expected '1' \(default\) or '0'"
    ):
        lookup_by_proposal_setting()


def test_the_lookup_rows_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(LOOKUP_MAX_ROWS_ENV, raising=False)
    assert lookup_max_rows_setting() == DEFAULT_LOOKUP_MAX_ROWS == 64
    monkeypatch.setenv(LOOKUP_MAX_ROWS_ENV, "128")
    assert lookup_max_rows_setting() == 128
    monkeypatch.setenv(LOOKUP_MAX_ROWS_ENV, "0")
    with pytest.raises(
        ValueError, match="SGLANG_DFLASH_LOOKUP_MAX_ROWS is '0'; expected a whole number >= 1"
    ):
        lookup_max_rows_setting()


def test_only_unseeded_batches_whose_logits_nothing_changes_verify_a_tree():
    bs = 4
    sampling_info = SimpleNamespace(logit_bias=None)
    batch = SimpleNamespace(
        batch_size=lambda: bs, sampling_info=sampling_info, return_logprob=False, return_hidden_states=False
    )
    greedy = BatchSampling.from_params([SamplingParams()] * bs)
    sampled = BatchSampling.from_params([SamplingParams(temperature=0.7)] * bs)
    seeded = BatchSampling.from_params([SamplingParams(temperature=0.7, seed=1)] * bs)
    seeded_greedy = BatchSampling.from_params([SamplingParams(seed=1)] * bs)
    assert tree_step_applies(batch, greedy, False, False)
    assert tree_step_applies(batch, sampled, False, False)
    assert tree_step_applies(batch, seeded_greedy, False, False)
    assert not tree_step_applies(batch, seeded, False, False)  # seeded: the chain
    assert not tree_step_applies(batch, greedy, True, False)  # penalties
    assert not tree_step_applies(batch, greedy, False, True)  # a grammar
    batch.return_logprob = True
    assert not tree_step_applies(batch, greedy, False, False)


def test_a_missing_tree_file_is_refused_naming_the_value(tmp_path, monkeypatch):
    monkeypatch.setenv(VERIFY_TREE_ENV, str(tmp_path / "absent.json"))
    with pytest.raises(ValueError, match="absent.json'; expected 'off', 'auto' or a tree JSON file"):
        verify_tree_setting(server_args(tmp_path), 16, "cpu")


def test_committing_a_path_points_its_positions_at_the_path_nodes_slots():
    on_path = torch.tensor([[True, False, True, False], [True, True, False, True]])
    order = path_order(on_path)
    assert order.tolist() == [[0, 2, 1, 3], [0, 1, 3, 2]]
    req_to_token = torch.arange(40, dtype=torch.int32).view(2, 20)
    slots = req_to_token[[1, 0]][:, 5:9].clone()  # requests in pool rows 1 and 0, block at position 5
    placed = commit_path_slots(req_to_token, torch.tensor([1, 0]), torch.tensor([5, 5]), slots, order)
    assert placed.tolist() == [[25, 27, 26, 28], [5, 6, 8, 7]]
    assert req_to_token[1, 5:9].tolist() == [25, 27, 26, 28] and req_to_token[0, 5:9].tolist() == [5, 6, 8, 7]
    assert sorted(req_to_token.view(-1).tolist()) == list(range(40))  # the same slots, permuted


def test_the_first_pass_depth_comes_from_the_environment(monkeypatch):
    tree = DraftTree.from_paths([(0,), (1,), (0, 0), (0, 1), (0, 0, 0)])  # depths 1, 1, 2, 2, 3
    monkeypatch.delenv(TREE_FIRST_DEPTH_ENV, raising=False)
    assert tree_first_pass_nodes(tree) == 6  # default: one pass
    monkeypatch.setenv(TREE_FIRST_DEPTH_ENV, "2")
    assert tree_first_pass_nodes(tree) == 5  # the root and four nodes
    monkeypatch.setenv(TREE_FIRST_DEPTH_ENV, "1")
    assert tree_first_pass_nodes(tree) == 3
    monkeypatch.setenv(TREE_FIRST_DEPTH_ENV, "0")
    assert tree_first_pass_nodes(tree) == 6  # one pass
    unordered = DraftTree(parents=(0, 1, 0), ranks=(0, 0, 1))  # node 3 (depth 1) after node 2 (depth 2)
    monkeypatch.setenv(TREE_FIRST_DEPTH_ENV, "1")
    assert tree_first_pass_nodes(unordered) == 4  # not ordered by depth: one pass
    monkeypatch.setenv(TREE_FIRST_DEPTH_ENV, "two")
    with pytest.raises(ValueError, match="SGLANG_DFLASH_TREE_FIRST_DEPTH is 'two'; expected a whole number"):
        tree_first_pass_nodes(tree)


def test_node_argmax_computes_the_subtree_ahead_and_the_second_pass_once():
    """The walk's answers equal the full argmax; a call also fills the next nodes of the subtree
    (up to cheap_rows rows), and the later nodes' pass runs once, for the requests reaching them."""
    tree = DraftTree.from_paths([(0,), (1,), (0, 0), (0, 1), (0, 0, 0)])  # nodes 1-5; 3 and 4 under 1
    split = tree.nodes_to_depth(1)  # the root, nodes 1 and 2 in the first pass
    argmax = torch.tensor([[7, 8, 9, 1, 2, 3], [4, 5, 6, 7, 8, 9]])
    calls: list[tuple[str, list[int]]] = []

    def first(rows):
        calls.append(("first", rows.tolist()))
        return argmax[:, :split].reshape(-1)[rows]

    def second(reach):
        calls.append(("second", reach.tolist()))
        return lambda rows: argmax[reach][:, split:].reshape(-1)[rows]

    at = NodeArgmax(tree, 2, split, first, second, cheap_rows=4, device="cpu")
    assert at(torch.tensor([0, 1]), torch.tensor([0, 0])).tolist() == [7, 4]
    assert calls == [("first", [0, 1, 3, 4])]  # 4 rows for 2 requests: each root and its first child
    assert at(torch.tensor([1]), torch.tensor([1])).tolist() == [5] and len(calls) == 1  # known
    assert at(torch.tensor([1]), torch.tensor([3])).tolist() == [7]
    assert calls[1:] == [("second", [1])] and at.rows_computed == 6  # node 3 and its child 5
    assert at(torch.tensor([1]), torch.tensor([5])).tolist() == [9] and at.rows_computed == 6
    with pytest.raises(RuntimeError, match="after their pass had run"):
        at(torch.tensor([0]), torch.tensor([4]))


def test_a_walk_stopped_before_a_right_node_commits_that_nodes_draft_as_its_bonus():
    nodes, argmax = torch.tensor([[5, 1, 2, 3]]), one_hot_logits([[1, 3, 7, 6]])  # 1 then 3 are right
    stop_at_3 = lambda requests, at: at != 3  # noqa: E731
    path, num_correct, out = FORK.greedy_walk(nodes, lambda r, n: argmax.argmax(-1)[r, n], stop_at_3)
    assert path.int().tolist() == [[1, 1, 0, 0]] and num_correct.tolist() == [1]
    assert out.tolist() == [[1, 3, 3]]  # node 3's draft, the target's token after node 1, is the bonus


# ----------------------------------------------------------------------------- fit-tree command
def test_fit_tree_writes_one_tree_per_size_from_the_slices_ranks(smollm2_float32, tmp_path):
    from cpu_server import SHIPPED_SMOLLM2_DRAFTER

    from sglang_dflash.cli import main
    from sglang_dflash.smollm2 import ensure_smollm2

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        "".join(json.dumps({"prompt": f"Return {n} plus one in Python."}) + "\n" for n in range(4))
    )
    argv = ["fit-tree", "--target", ensure_smollm2(), "--drafter", SHIPPED_SMOLLM2_DRAFTER]
    argv += [
        "--set",
        str(prompts),
        str(tmp_path / "greedy.jsonl"),
        "--first-prompt",
        "1",
        "--num-prompts",
        "2",
    ]
    argv += ["--max-new-tokens", "16", "--num-drafts", "3", "6", "--out", str(tmp_path / "tree-{n}.json")]
    assert main(argv) == 0
    for drafts in (3, 6):
        tree = load_tree(str(tmp_path / f"tree-{drafts}.json"))
        assert tree.num_nodes == drafts + 1
        fitted_on = json.load(open(tmp_path / f"tree-{drafts}.json"))["fitted_on"]
        assert (fitted_on["first_prompt"], fitted_on["num_prompts"]) == (1, 2) and fitted_on["anchors"] > 0


def test_fit_tree_refuses_several_sizes_into_one_file_before_loading(tmp_path, capsys):
    from sglang_dflash.cli import main

    argv = ["fit-tree", "--target", str(tmp_path / "absent"), "--drafter", str(tmp_path / "absent")]
    argv += ["--set", "p.jsonl", "r.jsonl", "--num-drafts", "3", "6", "--out", str(tmp_path / "tree.json")]
    assert main(argv) == 2
    assert "expected a path holding {n} for several --num-drafts" in capsys.readouterr().err
