"""``summary_mode: xor`` (msprobe 26.x): the XOR of a tensor's raw bytes, in element order, read as
little-endian 64-bit words with the last one zero-padded; written as ``"0x%016x"`` in the ``md5`` field.

On the CPU it is a host value at once (numpy's XOR reduction over the bytes); on an accelerator it is
folded on the tensor's own device (halves XORed until one word is left: log2(n) kernels, no host
sync) and comes to the host with the batch's other values."""
from __future__ import annotations

from typing import Optional

import numpy
import torch

_WORD = numpy.dtype("<u8")
_MASK = (1 << 64) - 1


def hex_word(value: Optional[int]) -> Optional[str]:
    """msprobe's spelling of a checksum (a signed int64 from the device as its unsigned bits)."""
    return None if value is None else f"0x{int(value) & _MASK:016x}"


def has_bytes(t: torch.Tensor) -> bool:
    """Whether ``t`` has raw bytes to checksum (not empty, not meta, dense)."""
    return t.numel() > 0 and not t.is_meta and t.layout == torch.strided


def raw_bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes in element order, as a flat uint8 tensor on its device."""
    if t.requires_grad:
        t = t.detach()
    if t.is_conj() or t.is_neg():  # lazy views: the memory holds the values before conj/neg
        t = t.resolve_conj().resolve_neg()
    t = t.contiguous()
    if t.dim() == 0:
        t = t.reshape(1)
    return t.view(-1).view(torch.uint8)


def xor_host(t: torch.Tensor) -> Optional[str]:
    """The checksum of a CPU tensor, now."""
    if not has_bytes(t):
        return None
    data = raw_bytes(t).numpy()
    whole = data.size - data.size % 8
    word = int(numpy.bitwise_xor.reduce(data[:whole].view(_WORD))) if whole else 0
    if whole < data.size:
        word ^= int.from_bytes(data[whole:].tobytes(), "little")
    return hex_word(word)


def xor_on_device(t: torch.Tensor) -> torch.Tensor:
    """The checksum of a tensor with bytes (``has_bytes``) as a 0-d int64 tensor on its device."""
    data = raw_bytes(t)
    pad = -data.numel() % 8
    if pad or data.storage_offset() % 8:  # int64 views need whole, aligned words
        data = torch.nn.functional.pad(data, (0, pad))
    words = data.view(torch.int64)
    while words.numel() > 1:
        if words.numel() % 2:
            words = torch.nn.functional.pad(words, (0, 1))
        half = words.numel() // 2
        words = torch.bitwise_xor(words[:half], words[half:])
    return words.reshape(())
