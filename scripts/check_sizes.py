#!/usr/bin/env python3
"""Checks the team's size limits: no Rust file over 600 lines, no product function over 100.

A file is every `.rs` under crates/ and tools/, tests included. A function is measured from its
`fn` line to its closing brace; product functions are those outside tests (files under a
`tests/` directory, files named `tests.rs` or `*_tests.rs`, and `#[cfg(test)]` modules). A
test's scenario may read top to bottom as one story, so test functions are not measured.

The measure relies on rustfmt's layout (CI checks formatting first): a body closes with a `}`
at the indentation of its `fn` line.

Exits 1 naming every file and function over its limit, as `path:line`.
"""

import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FN_LINES = 100

FN_START = re.compile(
    r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)'
)
TEST_MODULE = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{\s*$')


def rust_files(roots):
    for root in roots:
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if d not in ("target", "node_modules")]
            for name in sorted(files):
                if name.endswith(".rs"):
                    yield os.path.join(directory, name)


def is_test_file(path):
    parts = path.split(os.sep)
    name = parts[-1]
    return "tests" in parts[:-1] or name == "tests.rs" or name.endswith("_tests.rs")


def block_end(lines, start, indent):
    """The index of the line closing the block opened at or after `start`, or None."""
    opener = start
    while opener < len(lines) and not lines[opener].rstrip().endswith("{"):
        if lines[opener].rstrip().endswith(";"):
            return None  # a declaration without a body (a trait's method)
        opener += 1
    if opener == len(lines):
        return None
    if lines[opener].strip().endswith("}"):
        return opener
    for index in range(opener + 1, len(lines)):
        if lines[index].rstrip() == indent + "}":
            return index
    return None


def long_functions(path, lines):
    found = []
    index = 0
    test_module_until = -1
    while index < len(lines):
        line = lines[index]
        if index > test_module_until and line.strip() == "#[cfg(test)]":
            # The module may carry more attributes between `#[cfg(test)]` and its `mod` line.
            after = index + 1
            while after < len(lines) and lines[after].strip().startswith("#["):
                after += 1
            module = TEST_MODULE.match(lines[after]) if after < len(lines) else None
            if module:
                end = block_end(lines, after, module.group(1))
                test_module_until = end if end is not None else len(lines)
        start = FN_START.match(line)
        if start and index > test_module_until:
            end = block_end(lines, index, start.group(1))
            if end is not None and end - index + 1 > MAX_FN_LINES:
                found.append((index + 1, start.group(8), end - index + 1))
        index += 1
    return found


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    problems = []
    for path in rust_files(["crates", "tools"]):
        with open(path, encoding="utf-8") as file:
            lines = file.read().split("\n")
        count = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
        if count > MAX_FILE_LINES:
            problems.append(f"{path}:1: {count} lines (at most {MAX_FILE_LINES} per file)")
        if not is_test_file(path):
            for line, name, length in long_functions(path, lines):
                problems.append(
                    f"{path}:{line}: fn {name} is {length} lines (at most {MAX_FN_LINES})"
                )
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} over the size limits", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
