#!/usr/bin/env python3
"""Checks that every relative link in README.md, ARCHITECTURE.md and docs/*.md resolves:
the file exists and, when the link names an anchor, the file has a heading with that
GitHub anchor. With --fix, a bare `#anchor` that names a heading of another of these
files is rewritten to point there (used once, when the README was split into docs/).

    python3 scripts/doc-links.py [--fix]
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\]\(([^()\s]+)\)")


def files():
    out = ["README.md", "ARCHITECTURE.md"]
    out += sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    return out


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    seen, out, fence = {}, set(), False
    for line in open(os.path.join(ROOT, path), encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
            continue
        m = re.match(r"^(#{1,6}) (.*)", line)
        if m and not fence:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def main():
    fix = "--fix" in sys.argv
    names = files()
    heads = {f: anchors(f) for f in names}
    bad = []
    for f in names:
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        here = os.path.dirname(f)

        def check(m):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                return m.group(0)
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(here, path)) if path else f
            if not os.path.exists(os.path.join(ROOT, resolved)):
                bad.append(f"{f}: {target}: no such file")
                return m.group(0)
            if anchor and resolved in heads and anchor not in heads[resolved]:
                owners = [g for g in names if anchor in heads[g]]
                if fix and len(owners) == 1:
                    rel = os.path.relpath(owners[0], here or ".")
                    return f"]({rel}#{anchor})"
                bad.append(f"{f}: {target}: no heading #{anchor} in {resolved}"
                           + (f" (it is in {', '.join(owners)})" if owners else ""))
            return m.group(0)

        fixed = LINK.sub(check, text)
        if fix and fixed != text:
            open(os.path.join(ROOT, f), "w", encoding="utf-8").write(fixed)
    for line in bad:
        print(line)
    if bad:
        sys.exit(f"{len(bad)} broken links")
    print(f"doc links: every relative link of {len(names)} files resolves")


if __name__ == "__main__":
    main()
