"""SGLang's sizing of ``req_to_token`` rows, for tests that put a block at the end of one."""

from __future__ import annotations

from types import SimpleNamespace


def host_row_width(context_length: int, block_size: int, page_size: int = 1) -> int:
    """SGLang's ``req_to_token`` row width under DFLASH: the context length plus its headroom for
    speculative decoding (4 + one block at page size 1; more with larger pages)."""
    from sglang.srt.mem_cache.allocation_sizing import get_req_to_token_extra_context_len

    flags = SimpleNamespace(
        max_speculative_num_draft_tokens=block_size,
        speculative_algorithm="DFLASH",
        speculative_num_steps=1,
        speculative_eagle_topk=1,
        page_size=page_size,
    )
    return context_length + get_req_to_token_extra_context_len(flags)
