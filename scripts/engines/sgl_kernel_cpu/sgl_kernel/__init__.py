"""A plain-torch stand-in for the two ``sgl_kernel`` CPU ops SGLang's CPU engine needs for a dense Llama.

Why it exists: with ``SGLANG_USE_CPU_ENGINE=1`` SGLang imports ``sgl_kernel`` (its C++ kernel library,
CPU build). PyPI only ships CUDA builds of it, and the CPU build is compiled from the SGLang repository.
A tiny dense Llama served with ``--attention-backend torch_native`` only ever calls the two functions
below, both simple index writes, so they are written here in torch. Every other name can be imported
(SGLang imports many at module load) but raises as soon as it is called, so a code path that needs a real
kernel never runs with a silent substitute.

Installed by ``engines.py install sglang``, which copies this package into the SGLang venv; the real
``sgl_kernel`` is never installed there.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import NoReturn

import torch


def assign_req_to_token_pool_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """Record freshly allocated KV slots in each request's row of the request-to-token table.

    Request ``i`` owns ``out_cache_loc`` entries packed one request after another; they land in columns
    ``start_offset[i]:end_offset[i]`` of row ``req_pool_indices[i]`` (what SGLang's Triton kernel
    ``assign_req_to_token_pool`` does on GPUs).
    """
    del pool_len  # the row length is req_to_token's own shape here
    taken = 0
    for row, start, end in zip(req_pool_indices.tolist(), start_offset.tolist(), end_offset.tolist(), strict=True):
        count = end - start
        req_to_token[row, start:end] = out_cache_loc[taken : taken + count].to(req_to_token.dtype)
        taken += count


def copy_all_layer_kv_cache_cpu(
    data_ptrs: torch.Tensor,
    strides: torch.Tensor,
    tgt_loc: torch.Tensor,
    src_loc: torch.Tensor,
) -> None:
    """Copy KV rows ``src_loc`` onto rows ``tgt_loc`` in every per-layer KV buffer.

    SGLang hands over raw buffer addresses (``data_ptrs``) and each buffer's row size in bytes
    (``strides``), as its Triton kernel ``copy_all_layer_kv_cache_tiled`` takes them; each buffer is
    viewed as bytes up to the highest row touched and the rows are copied with index assignment.
    """
    if tgt_loc.numel() == 0:
        return
    rows = int(max(int(tgt_loc.max()), int(src_loc.max()))) + 1
    src, tgt = src_loc.long(), tgt_loc.long()
    for address, stride in zip(data_ptrs.tolist(), strides.tolist(), strict=True):
        raw = (ctypes.c_uint8 * (rows * stride)).from_address(address)
        buffer = torch.frombuffer(raw, dtype=torch.uint8).view(rows, stride)
        buffer[tgt] = buffer[src]  # the right side is gathered first, so overlapping rows are safe


def __getattr__(name: str) -> Callable[..., NoReturn]:
    """Any other op: importable (SGLang imports many at module load) but failing the moment it is called."""
    if name.startswith("__"):
        raise AttributeError(name)  # module protocol probes (__version__, __path__...) keep their meaning

    def missing(*args: object, **kwargs: object) -> NoReturn:
        raise NotImplementedError(
            f"sgl_kernel.{name} was called, but the agentcache CPU stand-in only provides "
            "assign_req_to_token_pool_cpu and copy_all_layer_kv_cache_cpu. This model or server option needs "
            "a real sgl_kernel CPU build: serve the dense test model with --attention-backend torch_native, "
            "or build sgl-kernel for CPU from the SGLang repository."
        )

    missing.__name__ = name
    return missing
