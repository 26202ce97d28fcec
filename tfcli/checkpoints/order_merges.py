"""BPE merges implied by a vocabulary whose order is its merge order (Gemma's GGUF lists no
merges), in O(n log n) of the vocabulary's characters.

The merges are every split of a token into two pieces that are tokens too, earliest token first
and, within a token, the longer left piece first - what transformers' generate_merges gives
with scores -index. Testing each split by slicing costs O(L) per split and O(L^2) per token of
length L (a vocabulary of 65k-character tokens takes minutes). Here every prefix and suffix of
every token is hashed at once (a polynomial hash mod 2**31 - 1, NumPy, in chunks of bounded
memory) and looked up among the tokens' own (hash, length) keys by sorting; only the splits
that match are sliced, and checked against the vocabulary, so a hash collision cannot add a
merge. The work is the vocabulary's characters plus the merges produced.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tfcli.core.arrays import Array

_P = 2**31 - 1  # a prime: products of two residues fit in int64
_BASE = 1_000_003
_LENGTH_BITS = 20  # a key is hash << 20 | length; tokens are far shorter than 2**20
CHUNK_CHARS = 2**20  # characters hashed at once (a chunk holds at least one whole token)


def _powers(base: int, n: int) -> Array:
    """base**i mod P for i in [0, n) (n,), by doubling: O(n) work in O(log n) NumPy steps."""
    out = np.ones(max(n, 1), dtype=np.int64)
    size, step = 1, base % _P
    while size < n:
        grow = min(size, n - size)
        out[size:size + grow] = out[:grow] * step % _P
        size, step = size + grow, step * step % _P
    return out[:n]


class _Hasher:
    def __init__(self, longest: int) -> None:
        self.pw = _powers(_BASE, longest + 1)  # (longest + 1,)
        self.inv = _powers(pow(_BASE, _P - 2, _P), longest + 1)

    def prefixes(self, tokens: list[str]) -> tuple[Array, Array, Array, Array]:
        """For every character of the chunk (C,): the hash of the token's prefix ending there,
        that prefix's length k, the hash of the rest of the token, and the token's number."""
        lengths = np.array([len(t) for t in tokens], dtype=np.int64)  # (n,)
        codes = np.frombuffer("".join(tokens).encode("utf-32-le"), dtype=np.uint32)  # (C,)
        owner = np.repeat(np.arange(len(tokens)), lengths)  # (C,)
        starts = np.cumsum(lengths) - lengths  # (n,)
        k = np.arange(codes.size) - starts[owner] + 1  # (C,) prefix lengths 1..L
        running = np.cumsum(codes.astype(np.int64) * self.pw[k - 1] % _P)  # (C,)
        before = np.concatenate(([0], running))[starts][owner]  # (C,) sum up to the token
        prefix = (running - before) % _P
        whole = prefix[starts + lengths - 1][owner] if codes.size else prefix  # (C,)
        rest = (whole - prefix) % _P * self.inv[k] % _P  # hash of token[k:]
        return prefix, k, rest, owner


def _key(hashes: Array, lengths: Array) -> Array:
    return hashes << _LENGTH_BITS | lengths


def _chunks(tokens: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(first token's number, tokens) of at most CHUNK_CHARS characters (or one token)."""
    first, size = 0, 0
    for i, token in enumerate(tokens):
        if size and size + len(token) > CHUNK_CHARS:
            yield first, tokens[first:i]
            first, size = i, 0
        size += len(token)
    if first < len(tokens):
        yield first, tokens[first:]


def merges_from_order(vocab: dict[str, int], limit: int) -> list[tuple[str, str]]:
    """The merges (module docstring) of `vocab` (token -> index, indices distinct), or the
    first limit + 1 of them when there are more: the caller refuses so many."""
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])]
    longest = max((len(t) for t in tokens), default=0)
    if longest >= 2**_LENGTH_BITS:
        raise ValueError(f"a token of {longest:,} characters (at most {2**_LENGTH_BITS - 1:,})")
    if longest < 2:
        return []
    hasher = _Hasher(longest)
    known = []  # (hash, length) keys of every non-empty token
    for _, chunk in _chunks(tokens):
        prefix, k, _, owner = hasher.prefixes(chunk)
        ends = k == np.array([len(t) for t in chunk])[owner]
        known.append(_key(prefix[ends], k[ends]))
    keys = np.unique(np.concatenate(known))
    merges: list[tuple[str, str]] = []
    for first, chunk in _chunks(tokens):
        prefix, k, rest, owner = hasher.prefixes(chunk)
        lengths = np.array([len(t) for t in chunk])[owner]
        split = k < lengths
        hit = split & _member(_key(prefix, k), keys) & _member(_key(rest, lengths - k), keys)
        where = np.flatnonzero(hit)
        order = np.lexsort((-k[where], owner[where]))  # by token, then the longer left first
        for j in where[order]:
            token, cut = chunk[owner[j]], int(k[j])
            left, right = token[:cut], token[cut:]
            if left in vocab and right in vocab:
                merges.append((left, right))
                if len(merges) > limit:
                    return merges
    return merges


def _member(values: Array, sorted_keys: Array) -> Array:
    """values (C,) -> (C,) bool: each is among `sorted_keys` (unique, ascending)."""
    at = np.searchsorted(sorted_keys, values)
    at[at == sorted_keys.size] = 0
    return sorted_keys[at] == values if sorted_keys.size else np.zeros(values.shape, bool)
