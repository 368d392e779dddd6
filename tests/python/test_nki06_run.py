"""``python -m nkid.run`` and the ``NKID_NKI=1`` import hook: a script that
``import nki`` runs unchanged on nkid; AWS's own ``nki`` is not shadowed
unless asked."""

import os
import subprocess
import sys
import textwrap

import pytest

from nkid import _nki_hook, run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import nki
    import nki.language as nl
    import nki.isa as nisa
    from nki.typing import tensor

    @nki.jit
    def double(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out, src=t)
        return out

    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    assert np.array_equal(double(a), 2 * a)
    assert np.array_equal(nki.simulate(double)(a), 2 * a)
    print("ok", nki.__name__, sys.argv[1:], __name__)
''')


def _env(**kw):
    env = dict(os.environ)
    env.pop("NKID_NKI", None)
    env["PYTHONPATH"] = os.path.join(ROOT, "client", "python")
    env.update(kw)
    return env


def _py(args, cwd, **kw):
    return subprocess.run([sys.executable] + args, cwd=cwd, env=_env(**kw),
                          capture_output=True, text=True, timeout=120)


def test_run_script_with_import_nki(nkid_socket, tmp_path):
    (tmp_path / "k.py").write_text(SCRIPT)
    r = _py(["-m", "nkid.run", "k.py", "--flag", "x"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok nkid.nki06 ['--flag', 'x'] __main__"


def test_run_module(nkid_socket, tmp_path):
    (tmp_path / "kmod.py").write_text(SCRIPT)
    r = _py(["-m", "nkid.run", "-m", "kmod", "y"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok nkid.nki06 ['y'] __main__"


def test_run_usage_and_missing_script(tmp_path):
    r = _py(["-m", "nkid.run"], tmp_path)
    assert r.returncode == 2 and "usage: python -m nkid.run" in r.stdout
    r = _py(["-m", "nkid.run", "nope.py"], tmp_path)
    assert r.returncode == 2
    assert "cannot open script 'nope.py': no such file" in r.stderr


def test_unknown_submodule(tmp_path):
    r = _py(["-m", "nkid.run", "-m", "nki.compiler"], tmp_path)
    assert r.returncode != 0
    assert "No module named 'nki.compiler' (nkid's NKI 0.6 implements" in r.stderr


def _fake_aws(tmp_path):
    """A stand-in for AWS's nki package (a test double: the real one is
    not installable here), to see who wins."""
    pkg = tmp_path / "aws" / "nki"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("WHO = 'aws'\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / _nki_hook.PTH_NAME).write_text(_nki_hook.PTH_LINE)
    return str(tmp_path / "aws"), str(site)


PROBE = ("import site, sys; site.addsitedir(sys.argv[1]); import nki;"
         " print(getattr(nki, 'WHO', nki.__name__))")


def test_hook_only_when_asked(tmp_path):
    aws, site = _fake_aws(tmp_path)
    pp = os.pathsep.join([aws, os.path.join(ROOT, "client", "python")])
    r = _py(["-c", PROBE, site], tmp_path, PYTHONPATH=pp)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "aws"
    r = _py(["-c", PROBE, site], tmp_path, PYTHONPATH=pp, NKID_NKI="0")
    assert r.stdout.strip() == "aws"
    r = _py(["-c", PROBE, site], tmp_path, PYTHONPATH=pp, NKID_NKI="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "nkid.nki06"


def test_shipped_pth_is_the_hook_line():
    with open(os.path.join(ROOT, "client", "python", _nki_hook.PTH_NAME)) as f:
        assert f.read() == _nki_hook.PTH_LINE


def test_install_and_remove_hook(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "_site_dir", lambda user: str(tmp_path))
    p = run.install_hook()
    assert p == str(tmp_path / _nki_hook.PTH_NAME)
    assert open(p).read() == _nki_hook.PTH_LINE
    assert run.remove_hook() == p and not os.path.exists(p)
    assert run.remove_hook() is None


def test_install_in_process():
    try:
        _nki_hook.install()
        import nki
        import nki.language
        import nkid.nki06
        assert nki is nkid.nki06 and nki.language is nkid.nki06.language
    finally:
        _nki_hook.uninstall()
    assert "nki" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        __import__("nki")


def test_trace_to_file_of_a_06_kernel(tmp_path):
    """python -m nkid.trace (trace_to_file) traces a nki06 kernel with the
    0.6 front door's own trace (the 0.6 API refuses the legacy trace)."""
    import numpy as np
    from nkid import nki06 as nki, trace
    from nkid.nki.typing import tensor
    nl, nisa = nki.language, nki.isa

    @nki.jit
    def double(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nl.store(out, t)
        return out
    path = str(tmp_path / "k.nkir")
    traced = trace.trace_to_file(double, [tensor[[4, 8], np.float32]], path, target="trn2")
    assert traced.kernel.target == "trn2" and traced.outputs[0][1] == (4, 8)
    ref, k = trace.load(path)
    assert ref.kernel.name == "double" and ref.target == "trn2" and k.target == "trn2"
