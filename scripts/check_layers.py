#!/usr/bin/env python3
"""Checks the library's layering (Note [Layers] in cmake/KilnLayers.cmake).

  scripts/check_layers.py [BUILD_DIR]     (default: build)

1. The arrows drawn in docs/architecture.md (its ```layers block) must be exactly the
   dependencies each layer declares in CMake (BUILD_DIR/layers/layers.txt).
2. No source or header of a layer may include a header of a layer it does not build on,
   directly or through the layers below it. Each upward #include is listed.
Prints the include counts between folders and exits 1 on any mismatch or upward include.
"""
import collections
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]kiln/([a-z_]+)/', re.M)


def parse_arrows(lines):
    deps = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, rest = line.partition(":")
        deps[name.strip()] = set(rest.split())
    return deps


def documented():
    text = (ROOT / "docs" / "architecture.md").read_text()
    m = re.search(r"```layers\n(.*?)```", text, re.S)
    if not m:
        sys.exit("check_layers: docs/architecture.md has no ```layers block")
    return parse_arrows(m.group(1).splitlines())


def closure(deps):
    out = {}

    def visit(n):
        if n not in out:
            out[n] = {n}
            for d in deps.get(n, ()):
                out[n] |= visit(d)
        return out[n]

    for n in deps:
        visit(n)
    return out


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build")
    declared = parse_arrows((build / "layers" / "layers.txt").read_text().splitlines())
    drawn = documented()
    failures = 0
    for layer in sorted(set(declared) | set(drawn)):
        a, b = declared.get(layer), drawn.get(layer)
        if a != b:
            failures += 1
            print(f"layer {layer}: CMake declares {sorted(a) if a is not None else 'nothing'}, "
                  f"docs/architecture.md draws {sorted(b) if b is not None else 'nothing'}")

    allowed = closure(declared)
    counts = collections.Counter()
    for layer in declared:
        for path in sorted((ROOT / layer).rglob("*")):
            if path.suffix not in (".h", ".cpp"):
                continue
            for n, m in enumerate(INCLUDE.finditer(path.read_text())):
                target = m.group(1)
                counts[(layer, target)] += 1
                if target in declared and target not in allowed[layer]:
                    failures += 1
                    line = path.read_text().count("\n", 0, m.start()) + 1
                    print(f"upward include: {path.relative_to(ROOT)}:{line} includes "
                          f"kiln/{target}/ but {layer} builds only on "
                          f"{', '.join(sorted(allowed[layer] - {layer})) or 'nothing'}")
    print("includes between folders (from -> to: count):")
    for (a, b), c in sorted(counts.items()):
        if a != b:
            print(f"  {a} -> {b}: {c}")
    if failures:
        print(f"check_layers: {failures} problem(s)")
        return 1
    print(f"check_layers: {len(declared)} layers, arrows match docs/architecture.md, "
          "no upward include")
    return 0


if __name__ == "__main__":
    sys.exit(main())
