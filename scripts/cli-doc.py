#!/usr/bin/env python3
"""cli-doc.py ATR - rewrites the help blocks of docs/cli.md from the binary.

The first ```text block of the page holds the output of `atr --help`; each
section headed "## atr NAME" (or "## atr NAME MODE") holds the output of
`atr NAME [MODE] --help` in its first ```text block. tests/cli/test-help.sh
checks that they agree. Run after changing a help text or a summary."""
import re
import subprocess
import sys

atr = sys.argv[1]
path = "docs/cli.md"
doc = open(path).read()


def block(m):
    words = m.group(1).split()
    out = subprocess.run([atr] + words + ["--help"], capture_output=True, text=True, check=True)
    return "## atr %s%s```text\n%s```" % (m.group(1), m.group(2), out.stdout)


def top(m):
    out = subprocess.run([atr, "--help"], capture_output=True, text=True, check=True)
    return "%s```text\n%s```" % (m.group(1), out.stdout)


doc = re.sub(r"^## atr ([a-z]+(?: [a-z]+)?)(\n(?:(?!```text)[\s\S])*?)```text\n[\s\S]*?```",
             block, doc, flags=re.M)
# The top-level page: the first block, before any "## " section.
doc = re.sub(r"\A((?:(?!^## |```text)[\s\S])*?)```text\n[\s\S]*?```", top, doc, count=1,
             flags=re.M)
open(path, "w").write(doc)
