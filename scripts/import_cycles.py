"""File-level import cycles in the workspace's crates (issue 16: no file imports a file
that imports it back, directly or through others). Edges go from each file's
`crate::`/`super::`/`self::` paths (in `use` items and in code; comments and test
modules left out) to the file defining the deepest module the path names. Prints
every strongly connected component of more than one file; exits 1 if there is one.

    python3 scripts/import_cycles.py [WORKSPACE_ROOT]"""
import os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 else "."
crates = {}
for d in sorted(os.listdir(root)):
    src = os.path.join(root, d, "src")
    if os.path.isfile(os.path.join(src, "lib.rs")) or os.path.isfile(os.path.join(src, "main.rs")):
        crates[d] = src
def modules(src):
    """module path tuple -> file"""
    out = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"): continue
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, src)[:-3].split(os.sep)
            if rel[-1] in ("lib", "main") and len(rel) == 1: rel = []
            elif rel[-1] == "mod": rel = rel[:-1]
            out[tuple(rel)] = full
    return out
edges = {}
for crate, src in crates.items():
    mods = modules(src)
    for path, file in mods.items():
        text = open(file).read()
        # strip test modules (after #[cfg(test)]) crudely
        text = text.split("#[cfg(test)]")[0]
        text = "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))
        refs = []
        for m in re.finditer(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)", text):
            base, rest = m.group(1), m.group(2).split("::")[1:]
            if base == "crate": p = []
            elif base == "self": p = list(path) if not file.endswith(("mod.rs","lib.rs","main.rs")) or True else list(path)
            else:
                p = list(path[:-1])
                # chained super::super
            while rest and rest[0] == "super":
                p = p[:-1]; rest = rest[1:]
            if base == "self": p = list(path)
            refs.append(p + rest)
        # use groups: crate::a::{b, c::d}
        for m in re.finditer(r"use\s+(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", text, re.S):
            base = m.group(1); pre = [x for x in m.group(2).split("::") if x]
            p = [] if base == "crate" else (list(path[:-1]) if base == "super" else list(path))
            for item in re.split(r",", m.group(3)):
                item = item.strip().split(" as ")[0]
                if not item or "{" in item or "}" in item: continue
                refs.append(p + pre + item.split("::"))
        for ref in refs:
            best = None
            for n in range(len(ref), -1, -1):
                if tuple(ref[:n]) in mods:
                    best = mods[tuple(ref[:n])]; break
            if best and best != file:
                edges.setdefault(file, set()).add(best)
# Tarjan
index = {}; low = {}; stack = []; on = set(); sccs = []; counter = [0]
sys.setrecursionlimit(10000)
def strong(v):
    index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in index: strong(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(sorted(comp))
for v in list(edges):
    if v not in index: strong(v)
for c in sccs:
    print(" <-> ".join(os.path.relpath(f, root) for f in c))
print(f"import cycles: {len(sccs)}", file=sys.stderr)
sys.exit(1 if sccs else 0)
