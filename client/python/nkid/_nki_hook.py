"""The ``import nki`` hook: NKI 0.6 kernels resolved to nkid.nki06.

:func:`install` puts a finder first on ``sys.meta_path`` that answers
``nki`` and every ``nki.<sub>`` with nkid's modules (``nkid.nki06`` and
``nkid.nki06.<sub>``), as aliases: ``import nki.language as nl`` gives
``nkid.nki06.language`` itself.  Nothing is imported until a kernel file
imports ``nki``.

Who installs it: ``python -m nkid.run script.py`` (always), and any Python
process started with ``NKID_NKI=1`` in its environment, through the
``nkid-nki.pth`` file ``python -m nkid.run --install-hook`` writes into
site-packages (``make python`` does it for the tree's .venv).  The .pth
line reads only the environment when ``NKID_NKI`` is unset or ``0``: AWS's
own ``nki`` package, when installed, is never shadowed unless asked.
"""

import importlib.abc
import importlib.util
import sys

__all__ = ["install", "uninstall", "installed", "PTH_NAME", "PTH_LINE", "ENV"]

ENV = "NKID_NKI"
PTH_NAME = "nkid-nki.pth"
#: one line: a .pth line starting with "import" is executed at startup
PTH_LINE = ("import os; os.environ.get('NKID_NKI', '') not in ('', '0') and"
            " __import__('nkid._nki_hook', fromlist=['install']).install()\n")

_PREFIX = "nki"
_TARGET = "nkid.nki06"


class _Alias(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class NkiFinder(importlib.abc.MetaPathFinder):
    """Finds ``nki`` and ``nki.*`` as nkid's NKI 0.6 modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PREFIX and not fullname.startswith(_PREFIX + "."):
            return None
        real = _TARGET + fullname[len(_PREFIX):]
        try:
            mod = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name != real:
                raise
            raise ModuleNotFoundError("No module named '%s' (nkid's NKI 0.6 implements nki,"
                                      " nki.language, nki.isa, nki.typing and"
                                      " nki.collectives)" % fullname, name=fullname) from None
        spec = importlib.util.spec_from_loader(fullname, _Alias(mod),
                                               is_package=hasattr(mod, "__path__"))
        return spec


_finder = NkiFinder()


def installed():
    """True if ``import nki`` resolves to nkid in this process."""
    return _finder in sys.meta_path


def install():
    """Make ``import nki`` (and ``nki.*``) nkid's NKI 0.6 in this process.
    A ``nki`` module imported before (AWS's) is dropped from sys.modules
    so later imports see nkid's."""
    if not installed():
        sys.meta_path.insert(0, _finder)
    for name in [n for n in sys.modules if n == _PREFIX or n.startswith(_PREFIX + ".")]:
        if not getattr(sys.modules[name], "__name__", "").startswith(_TARGET):
            del sys.modules[name]


def uninstall():
    """Undo :func:`install` (modules already imported stay imported)."""
    while _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if n == _PREFIX or n.startswith(_PREFIX + ".")]:
        del sys.modules[name]
