"""The type stubs (ptmp/_ptmp.pyi) match the native module: every public
name of either is in the other, and every function and method has the same
parameters (names, order, defaults given or not, keyword-only or not)."""

import ast
import inspect
import os

import ptmp
from ptmp import _ptmp

STUBS = os.path.join(os.path.dirname(ptmp.__file__), "_ptmp.pyi")
if not os.path.exists(STUBS):  # a source checkout
    STUBS = os.path.join(os.path.dirname(__file__), "..", "ptmp", "_ptmp.pyi")


def stub_params(fn):
    a = fn.args
    pos = a.posonlyargs + a.args
    first_default = len(pos) - len(a.defaults)
    out = [(p.arg, "pos", i >= first_default) for i, p in enumerate(pos)]
    out += [(p.arg, "kw", d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return [p for p in out if p[0] != "self"]


def runtime_params(obj):
    kinds = {inspect.Parameter.KEYWORD_ONLY: "kw"}
    return [
        (p.name, kinds.get(p.kind, "pos"), p.default is not inspect.Parameter.empty)
        for p in inspect.signature(obj).parameters.values()
        if p.name != "self"
    ]


def stub_tree():
    return ast.parse(open(STUBS).read())


def test_every_public_name_is_in_the_stubs_and_back():
    tree = stub_tree()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
    runtime = {n for n in dir(_ptmp) if not n.startswith("__")}
    # Names written in Python (ptmp/__init__.py, over the native module)
    # carry their annotations there; every other public name is native.
    in_python = {n for n in ptmp.__all__ if getattr(getattr(ptmp, n), "__module__", "") == "ptmp"}
    assert in_python == {"read"}
    assert set(ptmp.__all__) - in_python <= names
    assert runtime - names == set(), "in the module, not in the stubs"
    public_stubs = {n for n in names if not n.startswith("_") and n not in ("Config", "BytesLike")}
    assert public_stubs - runtime == set(), "in the stubs, not in the module"
    assert public_stubs - {"VERSION_FRAME"} <= set(ptmp.__all__) | {"VERSION_FRAME"}


def test_signatures_match():
    checked = 0
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            assert stub_params(node) == runtime_params(getattr(_ptmp, node.name)), node.name
            checked += 1
        elif isinstance(node, ast.ClassDef) and not node.bases:
            cls = getattr(_ptmp, node.name)
            for m in node.body:
                if not isinstance(m, ast.FunctionDef):
                    continue
                if m.name.startswith("__") and m.name != "__init__":
                    continue  # protocol methods: their stubs take *a
                target = cls if m.name == "__init__" else getattr(cls, m.name)
                try:
                    want = runtime_params(target)
                except ValueError:
                    continue  # no signature recorded (slot wrappers)
                assert stub_params(m) == want, f"{node.name}.{m.name}"
                checked += 1
    assert checked > 40
