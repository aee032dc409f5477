#!/usr/bin/python3
"""Checks that README.md and docs/*.md name only what exists.

Every repository path in code spans and code blocks (`examples/jobs/x.pbtxt`,
`compiler/job_builder.h`, `docs/jobs.md`) must exist; every Bazel label
(`//bench:mlp_bench`, `//examples/mnist_mlp`) must name a package with a
BUILD.bazel that defines the target; every command-line flag (`--load=`,
`--samples`) must be defined somewhere in the sources, or be one of Bazel's
or a named tool's own. Prints each miss as FILE:LINE: what, and exits 1.

  /usr/bin/python3 tools/check_docs.py [REPO_ROOT]
"""
import os
import re
import sys

# Flags that belong to Bazel, the compilers and tools the docs show, not to
# this project's programs.
FOREIGN_FLAGS = {
    # bazel
    "config", "test_output", "runs_per_test", "test_arg", "test_filter",
    "compilation_mode", "copt", "linkopt", "define", "disk_cache",
    "test_timeout", "nocache_test_results", "jobs", "keep_going",
    "sandbox_debug", "subcommands", "verbose_failures", "remote_cache",
    "platform_suffix", "test_env", "run_under", "cache_test_results",
    "test_verbose_timeout_warnings", "output_base", "output_user_root",
    "repo_env", "action_env", "strip", "features", "dynamic_mode",
    "spawn_strategy", "local_test_jobs", "test_tag_filters",
    "build_tag_filters", "host_jvm_args", "max_idle_secs", "announce_rc",
    "noshow_progress", "show_result", "experimental_ui_max_stdouterr_bytes",
    # tools and peers shown in the docs
    "help", "version", "tool", "leak-check", "show-backtrace",
    "error-exitcode", "print-limit", "target-processes", "oversubscribe",
    "np", "n", "allow-run-as-root", "mca", "bind-to", "report-bindings",
    "nproc", "vs", "change", "base", "most", "user", "break-system-packages",
    "no-install-recommends", "quiet", "depth", "recursive", "single-branch",
}

PATH_RE = re.compile(
    r"(?<![\w/.$<{-])((?:[\w.+-]+/)+[\w.+-]*[\w+-](?:/)?)(?![\w/<>*{])")
LABEL_RE = re.compile(r"(?<![\w@:])//([\w/.+-]*)(?::([\w.+/-]+))?")
# A label with a placeholder target (//tests:<name>) names its package only.
PLACEHOLDER_RE = re.compile(r"(//[\w/.+-]*):<[^>]*>")
FLAG_RE = re.compile(r"(?<![\w-])--([a-z][a-z0-9_-]*[a-z0-9])")
SPAN_RE = re.compile(r"`([^`\n]+)`")


def code_of(text):
    """(line number, code text) of every code span and fenced block."""
    out = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            out.append((number, line))
        else:
            out.extend((number, span) for span in SPAN_RE.findall(line))
    return out


def defined_flags(root):
    """Every --flag spelled in the sources, and flag names defined."""
    found = set()
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".git", "bazel-"))
                   and d != "docs"]
        for name in files:
            if not name.endswith((".cc", ".h", ".py", ".sh", ".bzl", ".bazel",
                                  "bazelrc")) and "/tools" not in top and \
                    "/.ci" not in top:
                continue
            try:
                with open(os.path.join(top, name), encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            found.update(FLAG_RE.findall(text))
            # {"--samples", &samples}, "samples" flag tables, argparse.
            found.update(re.findall(r'"-{0,2}([a-z][a-z0-9_-]*)"', text))
    return found


def build_targets(root, package):
    path = os.path.join(root, package, "BUILD.bazel")
    if not os.path.exists(path):
        path = os.path.join(root, package, "BUILD")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read()


def check(root):
    docs = ["README.md"] + sorted(
        os.path.join("docs", n) for n in os.listdir(os.path.join(root, "docs"))
        if n.endswith(".md"))
    flags = defined_flags(root)
    problems = []
    for doc in docs:
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            text = f.read()
        for number, code in code_of(text):
            where = f"{doc}:{number}"
            for label in PLACEHOLDER_RE.findall(code):
                if build_targets(root, label[2:]) is None:
                    problems.append(f"{where}: {label}: no such package")
            code = PLACEHOLDER_RE.sub(" ", code)
            for package, target in LABEL_RE.findall(code):
                if package in ("...", "") or package.endswith("..."):
                    continue
                package = package.rstrip("/")
                build = build_targets(root, package)
                if build is None:
                    problems.append(f"{where}: //{package}: no such package")
                    continue
                name = target or package.split("/")[-1]
                if f'"{name}"' not in build and f"'{name}'" not in build:
                    problems.append(
                        f"{where}: //{package}:{name}: no such target")
            for flag in FLAG_RE.findall(code):
                if flag not in flags and flag not in FOREIGN_FLAGS:
                    problems.append(f"{where}: --{flag}: no program defines it")
            stripped = LABEL_RE.sub(" ", code)
            for path in PATH_RE.findall(stripped):
                first = path.split("/")[0]
                if not os.path.isdir(os.path.join(root, first)) and \
                        first not in ("README.md",):
                    continue  # not a path in this repository
                if not os.path.exists(os.path.join(root, path)):
                    problems.append(f"{where}: {path}: no such file")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    problems = check(root)
    for p in problems:
        print(p)
    print(f"check_docs: {len(problems)} problem(s) in README.md and docs/")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
