#!/usr/bin/env python3
"""The longest functions of the given Rust files or folders, longest first.

    python3 scripts/longest-fns.py src/console [N]

Counts the lines from each `fn` to the brace that closes its body (test modules
included; strings and comments are not parsed, which is close enough for a survey).
"""
import os
import re
import sys

FN = re.compile(r'^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:const\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)')


def files(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                for name in sorted(names):
                    if name.endswith('.rs'):
                        yield os.path.join(root, name)
        elif path.endswith('.rs'):
            yield path


def functions(path):
    lines = open(path, encoding='utf-8').read().splitlines()
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, opened = 0, False
        for j in range(i, len(lines)):
            for c in lines[j]:
                if c == '{':
                    depth, opened = depth + 1, True
                elif c == '}':
                    depth -= 1
            if opened and depth <= 0:
                yield m.group(1), i + 1, j - i + 1
                break
            if not opened and lines[j].rstrip().endswith(';'):
                break


def main():
    args = sys.argv[1:]
    count = int(args.pop()) if args and args[-1].isdigit() else 10
    found = [(n, path, name, line) for path in files(args or ['src'])
             for name, line, n in functions(path)]
    for n, path, name, line in sorted(found, reverse=True)[:count]:
        print(f'{n:5}  {path}:{line}  {name}')


if __name__ == '__main__':
    main()
