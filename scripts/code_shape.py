"""Code shape (issue 40): no source file over 500 lines and no function over 60 lines,
tests left out. Reads every `src/` file of the workspace's crates except the test crate
(`tests/`); a file's trailing `#[cfg(test)] mod ... {` block does not count, nor do
integration tests and benches. A function runs from its `fn` line to its closing brace
(strings and line comments are left out when braces are counted). Prints what is over a
limit, then a summary line; exits 1 if anything is.

    python3 scripts/code_shape.py [WORKSPACE_ROOT]"""
import os
import re
import sys

MAX_FILE_LINES = 500
MAX_FN_LINES = 60
FN = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)")

def counted_lines(lines):
    """How many of `lines` count: up to a trailing test module, if there is one."""
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() == "#[cfg(test)]" and re.match(r"\s*mod \w+\s*\{", following):
            return i
    return len(lines)

def code_of(line):
    """A line with its strings, character literals and line comment blanked out."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split("//")[0]

def long_functions(lines, counted):
    """(start line, length, name) of each function over the limit in lines[:counted]."""
    found = []
    for start in range(counted):
        m = FN.match(lines[start])
        if not m:
            continue
        depth, opened, end = 0, False, start
        while end < counted:
            code = code_of(lines[end])
            if not opened and code.rstrip().endswith(";") and "{" not in code:
                break  # a declaration without a body
            for c in code:
                if c == "{":
                    depth, opened = depth + 1, True
                elif c == "}":
                    depth -= 1
            if opened and depth <= 0:
                break
            end += 1
        length = end - start + 1
        if opened and length > MAX_FN_LINES:
            found.append((start + 1, length, m.group(6)))
    return found

def main(root):
    files, functions = [], []
    for crate in sorted(os.listdir(root)):
        src = os.path.join(root, crate, "src")
        if crate == "tests" or not os.path.isdir(src):
            continue
        for dirpath, _, names in os.walk(src):
            for name in sorted(names):
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
                counted = counted_lines(lines)
                if counted > MAX_FILE_LINES:
                    files.append((path, counted))
                functions += [(path, *fn) for fn in long_functions(lines, counted)]
    for path, counted in files:
        print(f"file over {MAX_FILE_LINES} lines: {os.path.relpath(path, root)} ({counted})")
    for path, start, length, name in functions:
        print(f"function over {MAX_FN_LINES} lines: {os.path.relpath(path, root)}:{start} {name} ({length})")
    print(f"code shape: {len(files)} files over {MAX_FILE_LINES} lines, "
          f"{len(functions)} functions over {MAX_FN_LINES} lines")
    return 1 if files or functions else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
