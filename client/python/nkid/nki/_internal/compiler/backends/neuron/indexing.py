"""``nkid.nki.compiler.backends.neuron.indexing``: ``TileIndex``, the type of
an index expression (nl.arange, nl.mgrid, loop variables)."""

from nkid.tracer.affine import IndexExpr as TileIndex

__all__ = ["TileIndex"]
