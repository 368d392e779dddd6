"""``nkid.nki.compiler.backends.neuron.tensor``: ``local_tile``, the type of
an on-chip tile (nkid's traced tensor)."""

from nkid.tracer.tensor import NkiTensor as local_tile

__all__ = ["local_tile"]
