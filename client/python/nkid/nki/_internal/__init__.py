"""Submodules that NKI's own reference kernels import from neuronxcc's
internals (nki-samples' reference/util and rmsnorm_quant), found through
the ``__path__`` of ``nkid.nki.compiler`` and ``nkid.nki.language``: only
the names those kernels use, as type annotations and a dtype size."""
