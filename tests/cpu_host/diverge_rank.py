"""Test-only: one tensor-parallel rank's drafter proposes other tokens than the others'.

With ``SGLANG_DFLASH_TEST_DIVERGE_RANK=r`` (tests/serving/test_dflash_tensor_parallel.py), rank r's
draft logits are rolled by one token id, as a rank whose drafter rounded differently would see
them (grammar masks still apply on top, so constrained drafts stay grammatical).  The worker must
still verify rank 0's drafts on every rank.
"""

from __future__ import annotations

import sys

import torch


def install(rank: int) -> None:
    from sglang_dflash.serving.model import DFlashDrafterForSGLang

    original = DFlashDrafterForSGLang.logits
    announced = []

    def diverging_logits(self, hidden: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        logits = original(self, hidden, *args, **kwargs)
        if self.shard.rank != rank:
            return logits
        if not announced:
            announced.append(True)
            print(f"sglang-dflash test: rank {rank} drafts diverge", file=sys.stderr, flush=True)
        return torch.roll(logits, shifts=1, dims=-1)

    DFlashDrafterForSGLang.logits = diverging_logits
