"""Test-only: lets the CUDA build of ``sgl_kernel`` be "imported" on a machine without a GPU driver.

Put this directory on ``PYTHONPATH`` *and* set ``SGLANG_DFLASH_SGL_KERNEL_STANDIN=1`` (the CPU engine
fixtures do both), so that SGLang's spawned scheduler and detokenizer processes get it too. Never
active where ``libcuda.so.1`` loads: on a GPU host the real ``sgl_kernel`` must be used. Never imported
by the ``sglang_dflash`` package.
"""

import os

if os.environ.get("SGLANG_DFLASH_SGL_KERNEL_STANDIN") == "1":
    import sgl_kernel_standin

    sgl_kernel_standin.install()

if os.environ.get("SGLANG_DFLASH_TEST_DIVERGE_RANK"):
    import diverge_rank

    diverge_rank.install(int(os.environ["SGLANG_DFLASH_TEST_DIVERGE_RANK"]))
