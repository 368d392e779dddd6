#!/usr/bin/env python3
"""nki_api_names.py: list every name of NKI's API reference, once.

Reads the reference's rst files (general/nki/api/nki.rst, nki.isa.rst,
nki.language.rst, nki.compiler.rst) at one commit of aws-neuron-sdk and
prints each name its autosummary blocks list, fully qualified
(``nki.isa.dma_copy``), in reference order; then the names the allocation
API's own modules define beyond those (general/nki/api/nki/compiler/*.py:
``nki.compiler.allocation_scope`` ...).  Commented-out entries
(``.. float32``) are not names of the reference.  The output is
docs/coverage-names.txt, checked in:

    scripts/nki_api_names.py --repo PATH-TO-aws-neuron-sdk > docs/coverage-names.txt

``--repo`` is a git checkout (or bare mirror) of aws-neuron/aws-neuron-sdk
holding the commit; ``--dir`` instead reads the files from a directory
laid out like the repository.

``--nki06`` lists NKI 0.6's reference instead (the standalone ``nki``
package: nki/api/{nki,nki.isa,nki.language,nki.collectives}.rst at
aws-neuron-sdk@81ce03ae, plus ``nki.language.tile_size``, which the
language page lists as a table rather than an autosummary, and the public
methods of the classes the reference lists, from their stub modules
nki/api/nki/*/__init__.py: ``nki.language.NkiTensor.indirect``): the output is
docs/coverage-names-06.txt, which docs/coverage.md's "NKI 0.6" section
accounts for (tests/python/test_coverage06.py):

    scripts/nki_api_names.py --nki06 --repo PATH-TO-aws-neuron-sdk > docs/coverage-names-06.txt
"""

import argparse
import ast
import re
import subprocess
import sys

COMMIT = "8a38e733"
COMMIT06 = "81ce03ae"
API06 = "nki/api"
RST06 = [("nki.rst", "nki"), ("nki.isa.rst", "nki.isa"), ("nki.language.rst", "nki.language"),
         ("nki.collectives.rst", "nki.collectives")]
EXTRA06 = ["nki.language.tile_size"]
#: The stub modules of the 0.6 reference, whose classes' methods the
#: generated pages document (``NkiTensor.indirect`` ...).
STUBS06 = [("__init__.py", "nki"), ("isa/__init__.py", "nki.isa"),
           ("language/__init__.py", "nki.language"),
           ("collectives/__init__.py", "nki.collectives")]
API = "general/nki/api"
RST = [("nki.rst", "nki"), ("nki.isa.rst", "nki.isa"), ("nki.language.rst", "nki.language"),
       ("nki.compiler.rst", "nki.compiler")]
ALLOC = [("compiler/__init__.py", "nki.compiler"), ("compiler/sbuf.py", "nki.compiler.sbuf"),
         ("compiler/psum.py", "nki.compiler.psum")]


def read(args, path):
    if args.dir:
        with open("%s/%s" % (args.dir, path)) as f:
            return f.read()
    return subprocess.run(["git", "-C", args.repo, "show", "%s:%s" % (args.commit, path)],
                          check=True, capture_output=True, text=True).stdout


def autosummary(text):
    """The entries of every ``.. autosummary::`` block, in order."""
    names = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != ".. autosummary::":
            i += 1
            continue
        i += 1
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
            s = lines[i].strip()
            i += 1
            if not s or s.startswith(":") or s.startswith(".."):
                continue                # options, blank lines, rst comments
            names.append(s)
    return names


def module_names(text):
    """Public functions, classes and assignments of a stub module."""
    out = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, ast.Assign):
            out.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    return [n for n in out if not n.startswith("_")]


def class_methods(text, prefix, listed):
    """``prefix.Class.method`` for the public methods of each class of
    stub module text that the reference lists (in ``listed``)."""
    out = []
    for node in ast.parse(text).body:
        if not isinstance(node, ast.ClassDef) or "%s.%s" % (prefix, node.name) not in listed:
            continue
        for m in node.body:
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and not m.name.startswith("_"):
                out.append("%s.%s.%s" % (prefix, node.name, m.name))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", help="aws-neuron-sdk git checkout or mirror")
    ap.add_argument("--dir", help="a directory laid out like the repository instead")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--nki06", action="store_true",
                    help="NKI 0.6's reference (the nki package) instead of neuronxcc.nki's")
    args = ap.parse_args()
    if not args.repo and not args.dir:
        ap.error("give --repo or --dir")
    if args.nki06:
        args.commit = args.commit or COMMIT06
        return main06(args)
    args.commit = args.commit or COMMIT
    seen = set()
    out = ["# NKI's API reference, aws-neuron-sdk@%s (%s/{%s}); written by"
           " scripts/nki_api_names.py" % (args.commit, API, ",".join(r for r, _ in RST)),
           "# section: the names the rst files list"]
    for rst, prefix in RST:
        for n in autosummary(read(args, "%s/%s" % (API, rst))):
            full = "%s.%s" % (prefix, n)
            if re.fullmatch(r"[A-Za-z_][\w.]*", n) and full not in seen:
                seen.add(full)
                out.append(full)
    out.append("# section: what the allocation API's modules (%s/nki/compiler/*.py) add"
               % API)
    for path, prefix in ALLOC:
        for n in module_names(read(args, "%s/nki/%s" % (API, path))):
            full = "%s.%s" % (prefix, n)
            if full not in seen and n not in ("psum", "sbuf"):
                seen.add(full)
                out.append(full)
    sys.stdout.write("\n".join(out) + "\n")


def main06(args):
    seen = set()
    out = ["# NKI 0.6's API reference (the nki package), aws-neuron-sdk@%s (%s/{%s});"
           " written by scripts/nki_api_names.py --nki06"
           % (args.commit, API06, ",".join(r for r, _ in RST06)),
           "# section: the names the rst files list"]
    for rst, prefix in RST06:
        for n in autosummary(read(args, "%s/%s" % (API06, rst))):
            full = "%s.%s" % (prefix, n)
            if re.fullmatch(r"[A-Za-z_][\w.]*", n) and full not in seen:
                seen.add(full)
                out.append(full)
    out.append("# section: what the language page lists outside its autosummaries")
    for full in EXTRA06:
        if full not in seen:
            seen.add(full)
            out.append(full)
    out.append("# section: the public methods of the classes listed above (%s/nki/{%s})"
               % (API06, ",".join(p for p, _ in STUBS06)))
    for path, prefix in STUBS06:
        for full in class_methods(read(args, "%s/nki/%s" % (API06, path)), prefix, seen):
            if full not in seen:
                seen.add(full)
                out.append(full)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
