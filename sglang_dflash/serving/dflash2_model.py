"""The DFlash2 drafter as an SGLang model (registered for ``DFlash2DraftModel``).

The DFlash SGLang model (:mod:`.model`) with the DFlash2 additions of :mod:`sglang_dflash.dflash2`:
every layer wraps its attention and its MLP in a grouped in-block convolution, and the model keeps
its candidate selector.  A draft pass holds ``block_size`` contiguous rows per request (the worker's
TARGET_VERIFY-shaped batch), so a row's position in its block is ``row % block_size`` and no
convolution tap reaches another request.  Context K/V injection is unchanged: the context does not
pass through the convolutions.

The forward pass keeps the block's final-norm hidden states; :meth:`select_drafts` then walks the
candidate lattice of the worker's (penalised) draft logits with them (``StepInputs.selector``).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from sglang.srt.layers.logits_processor import LogitsProcessorOutput

from ..checkpoint import published_name
from ..config import DFlashConfig
from ..dflash2 import CandidateSelector, GroupedBlockConv, select_drafts
from ..speculative import BatchSampling, SeededDraws
from .model import DFlashDrafterForSGLang, DFlashSGLangLayer, add_rms_norm


class DFlash2SGLangLayer(DFlashSGLangLayer):
    """A DFlash SGLang layer with ``attention_conv`` and ``mlp_conv`` around its two sublayers."""

    def __init__(self, config: DFlashConfig, layer_id: int) -> None:
        super().__init__(config, layer_id)
        self.attention_conv = GroupedBlockConv(config)
        self.mlp_conv = GroupedBlockConv(config)

    def forward(self, positions, hidden, residual, forward_batch, cos_sin, block_size: int):
        x, residual = self.input_norm(hidden, residual)
        x, after = self.attention_conv.prepare(x, block_size)
        hidden = self.attention(positions, x, forward_batch, cos_sin)
        hidden = self.attention_conv.finish(hidden, after, block_size)
        x, residual = add_rms_norm(hidden, residual, self.post_attention_layernorm_weight, self.eps)
        x, after = self.mlp_conv.prepare(x, block_size)
        return self.mlp_conv.finish(self.mlp(x), after, block_size), residual


class DFlash2DrafterForSGLang(DFlashDrafterForSGLang):
    """SGLang entry class for ``architectures: ["DFlash2DraftModel"]`` checkpoints."""

    layer_class = DFlash2SGLangLayer
    generation = 2

    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__(config, quant_config, prefix)
        self.candidate_selector = CandidateSelector(self.dflash)
        self.block_hidden: torch.Tensor | None = None  # the last draft pass's final-norm states
        self.requires_grad_(False)

    def forward(
        self, input_ids: torch.Tensor, positions: torch.Tensor, forward_batch, **kwargs
    ) -> LogitsProcessorOutput:
        """One block of ``input_ids.shape[0] / batch_size`` rows per request; logits of every row."""
        if self._embed is None:
            raise RuntimeError("DFlash2DrafterForSGLang.set_embed_and_head() must be called before forward()")
        block_size = input_ids.shape[0] // forward_batch.batch_size
        hidden = self.embed(input_ids) * self.dflash.input_embedding_scale
        residual = None
        for layer in self.layers:
            hidden, residual = layer(positions, hidden, residual, forward_batch, self.cos_sin, block_size)
        hidden, _ = add_rms_norm(hidden, residual, self.norm_weight, self.eps)
        self.block_hidden = hidden.view(forward_batch.batch_size, block_size, -1)
        logits = self.logits(hidden)
        return LogitsProcessorOutput(next_token_logits=logits, hidden_states=None)

    def select_drafts(
        self,
        draft_logits: torch.Tensor,
        anchor_ids: torch.Tensor,
        sampling: BatchSampling,
        generator: torch.Generator | SeededDraws | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The selector's drafts for ``draft_logits`` [bs, n, V] (block positions 1 .. n of the last
        draft pass, penalties applied) and ``anchor_ids`` [bs] (the bonus tokens)."""
        if self.block_hidden is None:
            raise RuntimeError("DFlash2DrafterForSGLang.select_drafts() needs a draft pass first")
        hidden = self.block_hidden[:, 1 : 1 + draft_logits.shape[1]]
        return select_drafts(
            self.dflash, self.candidate_selector, hidden, draft_logits, anchor_ids, sampling, generator
        )

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """The DFlash tensors as :class:`DFlashDrafterForSGLang` loads them, then the new ones."""
        state = {published_name(name): tensor for name, tensor in weights}
        super().load_weights(state.items())  # checks every tensor's presence and shape (DFlash2 ones too)
        params = dict(self.named_parameters())
        with torch.no_grad():
            for name, tensor in state.items():
                if name.startswith("candidate_selector.") or "_conv." in name:
                    params[name].copy_(tensor)


EntryClass = DFlash2DrafterForSGLang
