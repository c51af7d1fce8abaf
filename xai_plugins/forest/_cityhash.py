"""CityHash64 (v1.0.2, the version in CatBoost's ``util/digest/city``), in plain Python: CatBoost keeps
only ``uint32(CityHash64(str(value)))`` of each category, so labels are matched to a model's
categories through it. Checked against the hashes CatBoost writes in its Python export
(``tests/test_catboost_categorical.py``), strings of 0 to 1,042 bytes."""

from __future__ import annotations

_MASK = (1 << 64) - 1
_K0, _K1, _K2, _K3 = 0xc3a5c85c97cb3127, 0xb492b66fbe98f273, 0x9ae16a3b2f90404f, 0xc949d7c7509e6557
_KMUL = 0x9ddfea08eb382d69


def _fetch64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 8], "little")


def _fetch32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 4], "little")


def _rotate(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _MASK


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash16(u: int, v: int) -> int:
    a = ((u ^ v) * _KMUL) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * _KMUL) & _MASK
    b ^= b >> 47
    return (b * _KMUL) & _MASK


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n > 8:
        a, b = _fetch64(s, 0), _fetch64(s, n - 8)
        return _hash16(a, _rotate((b + n) & _MASK, n)) ^ b
    if n >= 4:
        return _hash16((n + (_fetch32(s, 0) << 3)) & _MASK, _fetch32(s, n - 4))
    if n:
        y = (s[0] + (s[n >> 1] << 8)) & 0xffffffff
        z = (n + (s[n - 1] << 2)) & 0xffffffff
        return (_shift_mix((y * _K2 ^ z * _K3) & _MASK) * _K2) & _MASK
    return _K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    a, b = _fetch64(s, 0) * _K1 & _MASK, _fetch64(s, 8)
    c, d = _fetch64(s, n - 8) * _K2 & _MASK, _fetch64(s, n - 16) * _K0 & _MASK
    return _hash16((_rotate((a - b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK,
                   (a + _rotate(b ^ _K3, 20) - c + n) & _MASK)


def _len33to64(s: bytes) -> int:
    n = len(s)
    z = _fetch64(s, 24)
    a = (_fetch64(s, 0) + (n + _fetch64(s, n - 16)) * _K0) & _MASK
    b, c = _rotate((a + z) & _MASK, 52), _rotate(a, 37)
    a = (a + _fetch64(s, 8)) & _MASK
    c = (c + _rotate(a, 7)) & _MASK
    a = (a + _fetch64(s, 16)) & _MASK
    vf, vs = (a + z) & _MASK, (b + _rotate(a, 31) + c) & _MASK
    a = (_fetch64(s, 16) + _fetch64(s, n - 32)) & _MASK
    z = _fetch64(s, n - 8)
    b, c = _rotate((a + z) & _MASK, 52), _rotate(a, 37)
    a = (a + _fetch64(s, n - 24)) & _MASK
    c = (c + _rotate(a, 7)) & _MASK
    a = (a + _fetch64(s, n - 16)) & _MASK
    wf, ws = (a + z) & _MASK, (b + _rotate(a, 31) + c) & _MASK
    r = _shift_mix(((vf + ws) * _K2 + (wf + vs) * _K0) & _MASK)
    return (_shift_mix((r * _K0 + vs) & _MASK) * _K2) & _MASK


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _fetch64(s, i), _fetch64(s, i + 8), _fetch64(s, i + 16), _fetch64(s, i + 24)
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def city_hash64(s: bytes) -> int:
    """CityHash64 (v1.0.2) of the bytes ``s``, as an unsigned 64-bit integer."""
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    x, y, z = _fetch64(s, 0), _fetch64(s, n - 16) ^ _K1, _fetch64(s, n - 56) ^ _K0
    v, w = _weak32(s, n - 64, n, y), _weak32(s, n - 32, n * _K1 & _MASK, _K0)
    z = (z + _shift_mix(v[1]) * _K1) & _MASK
    x = _rotate((z + x) & _MASK, 39) * _K1 & _MASK
    y = _rotate(y, 33) * _K1 & _MASK
    for i in range(0, (n - 1) & ~63, 64):
        x = _rotate((x + y + v[0] + _fetch64(s, i + 16)) & _MASK, 37) * _K1 & _MASK
        y = _rotate((y + v[1] + _fetch64(s, i + 48)) & _MASK, 42) * _K1 & _MASK
        x ^= w[1]
        y ^= v[0]
        z = _rotate(z ^ w[0], 33)
        v = _weak32(s, i, v[1] * _K1 & _MASK, (x + w[0]) & _MASK)
        w = _weak32(s, i + 32, (z + w[1]) & _MASK, y)
        z, x = x, z
    return _hash16((_hash16(v[0], w[0]) + _shift_mix(y) * _K1 + z) & _MASK, (_hash16(v[1], w[1]) + x) & _MASK)
