"""nkid: NKI's front doors with the nkid daemon behind them.

``from nkid import nki`` gives the ``neuronxcc.nki`` API (``nki.jit``,
``nki.baremetal``, ``nki.simulate_kernel``, ...); ``nkid.nki.language``,
``nkid.nki.isa`` and ``nkid.nki.typing`` mirror NKI's modules.  Kernels are
traced in this process to NKIR and run by nkid (see docs/python.md).
``from nkid import nki06`` gives NKI 0.6, the standalone ``nki`` package's
language (``python -m nkid.run`` and ``NKID_NKI=1`` make ``import nki`` it).
"""

__version__ = "0.1.0"

from .errors import NkidError, NkidConnectionError, NKIError, NKISyntaxError  # noqa: E402
from . import nki  # noqa: E402

__all__ = ["nki", "NkidError", "NkidConnectionError", "NKIError", "NKISyntaxError",
           "__version__"]
