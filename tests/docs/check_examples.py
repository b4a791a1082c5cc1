#!/usr/bin/env python3
"""Checks that the code blocks the docs take from examples still say what the examples do.

A block marked in Markdown with the line

    <!-- example: examples/hello.cpp -->

right before its ```cpp fence must appear in that file as consecutive lines (compared without
their leading and trailing spaces, so a doc may show a loop's body less indented). The examples
themselves are compiled and run by the tests, so a marked block cannot rot.

    check_examples.py SOURCE_DIR
"""
import pathlib
import re
import sys

MARKER = re.compile(r"^<!-- example: (\S+) -->$")


def blocks(doc: pathlib.Path):
    """Yields (line number, example path, block lines) for each marked block of doc."""
    lines = doc.read_text().splitlines()
    for i, line in enumerate(lines):
        m = MARKER.match(line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            yield i + 1, m.group(1), None
            continue
        body = []
        for text in lines[i + 2:]:
            if text.startswith("```"):
                break
            body.append(text)
        yield i + 1, m.group(1), body


def contains(haystack, needle):
    n = len(needle)
    return any(haystack[k:k + n] == needle for k in range(len(haystack) - n + 1))


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    checked, failures = 0, []
    for doc in docs:
        for line, path, body in blocks(doc):
            where = f"{doc.relative_to(root)}:{line}"
            if body is None:
                failures.append(f"{where}: the marker is not followed by a code block")
                continue
            example = root / path
            if not example.is_file():
                failures.append(f"{where}: {path} does not exist")
                continue
            wanted = [t.strip() for t in body if t.strip()]
            have = [t.strip() for t in example.read_text().splitlines() if t.strip()]
            if not wanted or not contains(have, wanted):
                failures.append(f"{where}: the block is not in {path} as it stands (update one from the other)")
            checked += 1
    for f in failures:
        print(f, file=sys.stderr)
    print(f"{checked} marked blocks checked, {len(failures)} failed")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
