"""nkid.nki06.typing: NKI 0.6's ``nki.typing`` (``import nki.typing as nt``).

``nt.tensor[128, 512]`` (or ``nt.tensor[[128, 512], nl.float16]``)
annotates a kernel parameter's shape; as an argument it is a placeholder
with a shape and a dtype (float32 unless given) and no values.
"""

from ..nki.typing import tensor, mutable_tensor, TensorPlaceholder  # noqa: F401

__all__ = ["tensor", "mutable_tensor", "TensorPlaceholder"]
