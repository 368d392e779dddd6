"""An embedding layer with indirect DMA: the forward pass gathers table
rows by token id (nl.load of table[ids_tile, ...]), the backward pass
scatter-adds the output gradient into the table's gradient
(nl.atomic_rmw, repeated ids accumulate).  Token ids out of the
vocabulary fail the call (NKI's IndexError) naming the id and the table, unless the rows
holding them are masked off (padding past the sequence length)."""

import inspect

import numpy as np
import pytest

import nkid
from nkid import nki
import nkid.nki.language as nl

P = 128


@nki.jit
def embedding_fwd(table, ids, n_tokens):
    """out[i] = table[ids[i]] for i < n_tokens; ids [N, 1] int32."""
    n, dim = ids.shape[0], table.shape[1]
    out = nl.ndarray((n, dim), dtype=table.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(dim)[None, :]
    for t in nl.affine_range((n + P - 1) // P):
        live = t * P + i_p < n_tokens
        id_tile = nl.load(ids[t * P + i_p, nl.arange(1)[None, :]], mask=live)
        rows = nl.load(table[id_tile[i_p, 0], i_f], mask=live)
        nl.store(out[t * P + i_p, i_f], value=rows, mask=live)
    return out


@nki.jit
def embedding_bwd(grad_out, ids, vocab):
    """d_table[v] = sum of grad_out[i] over i with ids[i] == v."""
    n, dim = grad_out.shape
    d_table = nl.ndarray((vocab, dim), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(dim)[None, :]
    for t in nl.affine_range((vocab + P - 1) // P):
        nl.store(d_table[t * P + i_p, i_f], value=nl.zeros((P, dim), dtype=nl.float32),
                 mask=t * P + i_p < vocab)
    for t in nl.sequential_range(n // P):
        id_tile = nl.load(ids[nl.ds(t * P, P), :])
        g = nl.load(grad_out[nl.ds(t * P, P), :], dtype=nl.float32)
        nl.atomic_rmw(d_table[id_tile, i_f], value=g, op=np.add)
    return d_table


rng = np.random.default_rng(31)
TABLE = rng.standard_normal((1000, 64)).astype(np.float32)


def test_embedding_lookup(nkid_socket):
    ids = rng.integers(0, 1000, (384, 1)).astype(np.int32)
    np.testing.assert_array_equal(embedding_fwd(TABLE, ids, 384), TABLE[ids[:, 0]])


def test_padding_ids_past_the_length_are_never_read(nkid_socket):
    ids = np.full((256, 1), -7, np.int32)              # padding: out of the vocabulary
    ids[:200, 0] = rng.integers(0, 1000, 200)
    got = embedding_fwd(TABLE, ids, 200)
    np.testing.assert_array_equal(got[:200], TABLE[ids[:200, 0]])


def test_an_id_out_of_the_vocabulary_fails_the_call(nkid_socket):
    ids = rng.integers(0, 1000, (128, 1)).astype(np.int32)
    ids[77, 0] = 1000
    src, start = inspect.getsourcelines(embedding_fwd.func)
    line = start + next(i for i, s in enumerate(src) if "nl.load(table[" in s)
    with pytest.raises(IndexError) as e:        # NKI's simulator's exception
        embedding_fwd(TABLE, ids, 128)
    msg = e.value.message
    assert "run-time index 1000 on dimension 0 of tensor `table` exceeds its size 1000" in msg
    assert "test_advanced_embedding.py:%d" % line in msg


def test_embedding_gradient_scatter_adds(nkid_socket):
    vocab = 300
    ids = rng.integers(0, 40, (512, 1)).astype(np.int32)     # heavy repetition
    grad = rng.standard_normal((512, 64)).astype(np.float32)
    got = embedding_bwd(grad, ids, vocab)
    want = np.zeros((vocab, 64))
    np.add.at(want, ids[:, 0], grad.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.all(got[40:] == 0)


def test_embedding_gradient_with_a_bad_id_fails(nkid_socket):
    ids = rng.integers(0, 10, (128, 1)).astype(np.int32)
    ids[3, 0] = -1
    with pytest.raises(IndexError) as e:
        embedding_bwd(np.ones((128, 64), np.float32), ids, 10)
    assert "run-time index -1 on dimension 0 of tensor `d_table`" in e.value.message
