"""``python -m nkid.run``: run a script whose kernels ``import nki`` on nkid.

    python -m nkid.run script.py [args...]
    python -m nkid.run -m package.module [args...]
    python -m nkid.run --install-hook [--user]    # the NKID_NKI=1 hook
    python -m nkid.run --remove-hook [--user]

The script runs as ``__main__`` with ``import nki`` (``nki.language``,
``nki.isa``, ``nki.typing``, ``nki.collectives``) resolved to nkid's NKI
0.6 implementation (``nkid.nki06``), whether or not AWS's ``nki`` package
is installed; ``NKID_NKI=1`` is set in its environment so that Python
processes it starts do the same (when the hook is installed).
``--install-hook`` writes ``nkid-nki.pth`` into this interpreter's
site-packages (``--user``: the user site), which makes ``NKID_NKI=1`` work
for any Python process; without ``NKID_NKI`` it does nothing.
"""

import os
import runpy
import site
import sys
import sysconfig

from . import _nki_hook

__all__ = ["main", "install_hook", "remove_hook"]

USAGE = ("usage: python -m nkid.run script.py [args...]\n"
         "       python -m nkid.run -m module [args...]\n"
         "       python -m nkid.run --install-hook [--user] | --remove-hook [--user]\n")


def _site_dir(user):
    return site.getusersitepackages() if user else sysconfig.get_paths()["purelib"]


def install_hook(user=False):
    """Write the NKID_NKI hook's .pth into site-packages; its path."""
    d = _site_dir(user)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, _nki_hook.PTH_NAME)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(_nki_hook.PTH_LINE)
    os.replace(tmp, path)
    return path


def remove_hook(user=False):
    """Remove the hook's .pth; its path, or None if it was not there."""
    path = os.path.join(_site_dir(user), _nki_hook.PTH_NAME)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return None
    return path


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    if argv[0] in ("--install-hook", "--remove-hook"):
        user = argv[1:] == ["--user"]
        if argv[1:] and not user:
            sys.stderr.write(USAGE)
            return 2
        if argv[0] == "--install-hook":
            print(install_hook(user))
        else:
            p = remove_hook(user)
            print(p or "no hook installed")
        return 0
    os.environ[_nki_hook.ENV] = "1"
    _nki_hook.install()
    if argv[0] == "-m":
        if len(argv) < 2:
            sys.stderr.write(USAGE)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    path = argv[0]
    if not os.path.exists(path):
        sys.stderr.write("python -m nkid.run: cannot open script '%s': no such file\n" % path)
        return 2
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
