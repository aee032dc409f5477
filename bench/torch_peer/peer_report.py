"""What the peer benchmarks (torch_peer, python_peer) share: the CPU's name
for their headers, rewriting their generated block of docs/performance.md,
and the word on a flag spelled the old way."""

import sys


def warn_old_spellings(argv):
    """Flags are spelled with dashes; the parser also takes the old spelling
    with underscores (declared as a second option string). Says so for each
    one given that way, naming the right spelling."""
    for arg in argv:
        name = arg.split("=", 1)[0]
        if name.startswith("--") and "_" in name:
            print(f"warning: {name} is spelled {name.replace('_', '-')}; "
                  "the old spelling will go", file=sys.stderr)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def rewrite_readme(path, block, text):
    """Replaces what stands between <!-- BLOCK:begin --> and
    <!-- BLOCK:end --> in `path` with `text`; exits if there is no such
    block."""
    begin, end = f"<!-- {block}:begin -->", f"<!-- {block}:end -->"
    with open(path) as f:
        readme = f.read()
    if begin not in readme or end not in readme:
        sys.exit(f"{block}: {path} has no {begin} ... {end} block")
    head, rest = readme.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{tail}")
