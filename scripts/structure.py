#!/usr/bin/env python3
"""The shape rules of ARCHITECTURE.md ("Rules for a change"), checked.

For every crate's src/ (not its tests, not generated code):
  * no source file over 900 lines;
  * no function over 150 lines;
  * no two files of one crate that import each other (a parent module and
    its own child are one subject and do not count).

Prints each breach, naming the file, and exits 1 if there is any.
Standard library only: run it with any python3.
"""
import glob
import os
import re
import sys

MAX_FILE = 900
MAX_FN = 150

FN = re.compile(
    r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+(\w+)'
)
PATH = re.compile(r'\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)(::\{)?')


def code_of(text):
    """The text without comments and without a trailing test module."""
    text = re.sub(r"//[^\n]*", "", text)
    return re.split(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)[0]


def long_functions(lines):
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent = m.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}":
                if j - i + 1 > MAX_FN:
                    yield m.group(8), i + 1, j - i + 1
                break


def module_of(src, path):
    parts = os.path.relpath(path, src)[:-3].split(os.sep)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def imports(code, me, is_root, modules):
    """The modules of this crate that `code` (module `me`) names."""
    found = set()
    parent = list(me if is_root else me[:-1])
    for m in PATH.finditer(code):
        if not m.group(2) and not m.group(3):
            continue
        base = [] if m.group(1) == "crate" else parent
        heads = [m.group(2).split("::")[1:]]
        if m.group(3):
            # `crate::a::{b, c::d}`: each item of the group, one level deep.
            end = code.find("}", m.end())
            group = code[m.end():end]
            heads = [heads[0] + item.strip().split("::") for item in group.split(",") if item.strip()]
        for head in heads:
            full = base + head
            for k in range(len(full), 0, -1):
                t = tuple(full[:k])
                if t in modules:
                    if t != me:
                        found.add(t)
                    break
    return found


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    breaches = []
    for src in sorted(glob.glob("crates/*/src")):
        files = sorted(glob.glob(src + "/**/*.rs", recursive=True))
        modules = {module_of(src, f): f for f in files}
        deps = {}
        for f in files:
            text = open(f, encoding="utf-8").read()
            lines = text.split("\n")
            if len(lines) - 1 > MAX_FILE:
                breaches.append(f"{f}: {len(lines) - 1} lines (the limit is {MAX_FILE})")
            for name, at, n in long_functions(lines):
                breaches.append(f"{f}:{at}: fn {name} is {n} lines (the limit is {MAX_FN})")
            me = module_of(src, f)
            is_root = os.path.basename(f) in ("lib.rs", "main.rs", "mod.rs")
            deps[me] = imports(code_of(text), me, is_root, modules)
        for a in sorted(deps):
            for b in sorted(deps[a]):
                related = a == b[: len(a)] or b == a[: len(b)]
                if a < b and a in deps.get(b, ()) and not related:
                    breaches.append(
                        f"{modules[a]} and {modules[b]} import each other: "
                        "move what both need below them"
                    )
    for b in breaches:
        print(b)
    if breaches:
        print(f"{len(breaches)} breach(es) of the shape rules (ARCHITECTURE.md)", file=sys.stderr)
        return 1
    print("shape rules: files, functions and imports within bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
