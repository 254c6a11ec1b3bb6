#!/usr/bin/env python3
"""gen_chat.py - seeded generator of a large OpenAI-chat agent-trajectory NDJSON file.

Writes one row per line shaped like the SWE-Gym OpenHands rows in
shared/data/real/openai-chat/ ({instance_id, run_id, resolved, messages,
tools}): a system and a user message, then ~30 assistant turns, each with a
short thought (often empty) and one tool call (execute_bash or
str_replace_editor, arguments as a JSON string), each answered by a "tool"
message whose observation is 200-8000 characters of code, shell output,
tracebacks and file listings (quotes, backslashes, tabs, CRLF and some
non-ASCII, so the JSON needs escaping as real dumps do).

Speed matters (500+ MB): all text comes from pools of pieces generated once
from the seed; a row is assembled by picking pieces and written with one
json.dumps. The same seed and size give the same bytes.

usage: gen_chat.py OUT [--size-mb N] [--seed S]
"""
import argparse
import json
import math
import random
import sys

REPOS = ["python__mypy__1.6", "getmoto__moto__4.1", "pandas-dev__pandas__2.1",
         "iterative__dvc__3.1", "pydantic__pydantic__2.4", "dask__dask__2023.9",
         "conan-io__conan__2.0", "facebookresearch__hydra__1.3",
         "bokeh__bokeh__3.3", "Project-MONAI__MONAI__1.2"]
WORDS = ("self return value None True False import from def class if else for in "
         "not and or raise except try with as yield lambda assert kwargs args "
         "result config request response client session model data items keys "
         "index frame column dtype shape path file name error message status "
         "cache_key parse_args getattr isinstance TypeError ValueError KeyError "
         "AttributeError Optional Union List Dict Any Callable get_distribution "
         "create_invalidation mock_cloudfront DataFrame SeriesGroupBy HTTPServer "
         "slots dataclass attrs __init__ __repr__ _validate _check_type").split()
IDENT = [w for w in WORDS if w.replace("_", "").isalpha()]
UNICODE_BITS = ["\u2713", "\u2717", "\u00e9", "\u2014", "\u2192", "\u00b5s", "\u4e2d\u6587"]

SYSTEM = ("You are a helpful assistant that can interact with a computer to solve tasks.\n"
          "<IMPORTANT>\n* If user provides a path, you should NOT assume it's relative to "
          "the current working directory. Instead, you should explore the file system to "
          "find the file before working on it.\n</IMPORTANT>\n")


def tools_schema():
    """The tool list every row carries (ignored by converters, but parsed)."""
    def fn(name, desc, props):
        return {"function": {"description": desc, "name": name,
                             "parameters": {"properties": props, "required": ["command"],
                                            "type": "object"}},
                "type": "function"}
    bash_desc = ("Execute a bash command in the terminal.\n* Long running commands: For commands "
                 "that may run indefinitely, it should be run in the background and the output "
                 "should be redirected to a file, e.g. command = `python3 app.py > server.log "
                 "2>&1 &`.\n* Interactive: If a bash command returns exit code `-1`, this means "
                 "the process is not yet finished.\n") * 2
    edit_desc = ("Custom editing tool for viewing, creating and editing files\n* State is "
                 "persistent across command calls and discussions with the user\n* If `path` "
                 "is a file, `view` displays the result of applying `cat -n`.\n") * 4
    return [fn("execute_bash", bash_desc, {"command": {"type": "string",
                                                       "description": "The bash command."}}),
            fn("str_replace_editor", edit_desc,
               {"command": {"enum": ["view", "create", "str_replace", "insert", "undo_edit"],
                            "type": "string"},
                "path": {"type": "string"}, "old_str": {"type": "string"},
                "new_str": {"type": "string"}, "file_text": {"type": "string"}}),
            fn("finish", "Finish the interaction when the task is complete.", {})]


class Pools:
    """Text pieces generated once; rows pick from them."""

    def __init__(self, rng):
        self.rng = rng
        self.code = [self.code_line() for _ in range(6000)]
        self.out = [self.output_line() for _ in range(4000)]
        self.sentences = [self.sentence() for _ in range(600)]
        self.chunks = [self.chunk() for _ in range(3000)]
        self.commands = [self.command() for _ in range(800)]
        self.tasks = [self.task() for _ in range(300)]

    def ident(self):
        r = self.rng
        a, b = r.choice(IDENT), r.choice(IDENT)
        return r.choice([a, a + "_" + b, a + b.capitalize(), a.upper()])

    def code_line(self):
        r = self.rng
        ind = "    " * r.randint(0, 3)
        k = r.randrange(8)
        x, y, z = self.ident(), self.ident(), self.ident()
        if k == 0:
            return f'{ind}def {x}(self, {y}: Optional[str] = None, **kwargs) -> "{z}":'
        if k == 1:
            return f'{ind}raise {r.choice(["TypeError", "ValueError", "KeyError"])}(f"{x} {{{y}!r}} is not a valid \\"{z}\\"")'
        if k == 2:
            return f"{ind}{x} = {y}.get('{z}', {r.randint(0, 99999)})  # {r.choice(WORDS)} {r.choice(WORDS)}"
        if k == 3:
            return f'{ind}if isinstance({x}, {y.capitalize()}) and {z} is not None:'
        if k == 4:
            return f'{ind}return "\\n".join({x}.{y}() for {z} in self.{x}s)'
        if k == 5:
            return f"{ind}self.{x} = {{'{y}': [{r.randint(0, 999)}, {r.random():.6f}], '{z}': None}}"
        if k == 6:
            return f'{ind}assert {x} == {r.randint(-5000, 5000)}, "expected {y}\\t{z}"'
        return f"{ind}{x}.{y}({z}, path=r'C:\\tmp\\{x}', regex=r'^\\s*{y}\\d+$')"

    def output_line(self):
        r = self.rng
        k = r.randrange(7)
        repo = r.choice(REPOS)
        x, y = self.ident(), self.ident()
        if k == 0:
            return f'  File "/workspace/{repo}/{x}/{y}.py", line {r.randint(1, 3000)}, in {x}'
        if k == 1:
            return (f"tests/test_{x}.py::test_{y} "
                    f"{r.choice(['PASSED', 'FAILED', 'PASSED', 'SKIPPED'])}"
                    f"{' ' * r.randint(1, 30)}[{r.randint(0, 100):3d}%]")
        if k == 2:
            return f"/workspace/{repo}/{x}/{y}.py:{r.randint(1, 900)}:    {self.code_line().strip()}"
        if k == 3:
            return f"{x}.py\t\t    {y}.py\t   {x}_{y}.cfg\r"
        if k == 4:
            return f"E       AssertionError: assert '{x}' == '{y}' {r.choice(UNICODE_BITS)}"
        if k == 5:
            return (f"{r.randint(1, 40)} passed, {r.randint(0, 5)} failed, {r.randint(0, 9)} "
                    f"warnings in {r.random() * 20:.2f}s")
        return f"-rw-r--r-- 1 root root {r.randint(0, 99999):6d} Sep {r.randint(1, 30):2d} 12:{r.randint(0, 59):02d} {x}.py"

    def sentence(self):
        r = self.rng
        w = [r.choice(WORDS) for _ in range(r.randint(6, 24))]
        return ("Let me " + " ".join(w) + r.choice([".", ":", "!", " `" + self.ident() + "`."]))

    def chunk(self):
        """About 300-900 characters of one kind of observation text."""
        r = self.rng
        if r.random() < 0.5:
            start = r.randint(1, 2000)
            lines = [f"{start + i:6d}\t{r.choice(self.code)}" for i in range(r.randint(6, 20))]
        else:
            lines = [r.choice(self.out) for _ in range(r.randint(5, 16))]
        return "\n".join(lines) + "\n"

    def command(self):
        r = self.rng
        repo = r.choice(REPOS)
        x, y = self.ident(), self.ident()
        return r.choice([
            f"cd /workspace/{repo} && python -m pytest tests/test_{x}.py -x -q",
            f'grep -rn "{x}" /workspace/{repo}/{y} | head -n 50',
            f"python3 /workspace/{repo}/reproduce_error.py",
            f"ls -R /workspace/{repo}/{x}",
            f"cd /workspace/{repo} && git diff && git status",
            f"pip install -e /workspace/{repo} 2>&1 | tail -n 5",
            f"find /workspace/{repo} -name '*.py' -path '*{x}*' -exec grep -l '{y}' {{}} \\;",
        ])

    def task(self):
        r = self.rng
        body = "".join(r.choice(self.sentences) + " " for _ in range(r.randint(8, 30)))
        code = "\n".join(r.choice(self.code) for _ in range(r.randint(5, 25)))
        return (f"Consider the following PR description:\n\n<pr_description>\n{body}\n"
                f"```python\n{code}\n```\n</pr_description>\n\nCan you help me implement the "
                "necessary changes to the repository so that the requirements specified in the "
                "<pr_description> are met?\n")


class RowMaker:
    """Assembles rows from the pools; all randomness from one seeded RNG."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.p = Pools(self.rng)
        self.tools = tools_schema()
        self.n = 0

    def call_id(self):
        return "call_%024x" % self.rng.getrandbits(96)

    def observation(self, repo):
        r = self.rng
        target = int(math.exp(r.uniform(math.log(200), math.log(8000))))
        parts = ["OBSERVATION:\n"]
        size = 13
        if r.random() < 0.4:
            head = f"Here's the result of running `cat -n` on /workspace/{repo}/{self.p.ident()}.py:\n"
            parts.append(head)
            size += len(head)
        while size < target:
            c = r.choice(self.p.chunks)
            parts.append(c)
            size += len(c)
        text = "".join(parts)[:target]
        if r.random() < 0.5:
            text += f"\n[Python Interpreter: /usr/bin/python]\nroot@openhands-workspace:/workspace/{repo} # \n[Command finished with exit code {r.choice([0, 0, 1, 2])}]"
        return text

    def editor_args(self, repo):
        r = self.rng
        path = f"/workspace/{repo}/{self.p.ident()}/{self.p.ident()}.py"
        k = r.randrange(4)
        if k < 2:
            return {"command": "view", "path": path, "view_range": [r.randint(1, 200), -1]}
        old = "\n".join(r.choice(self.p.code) for _ in range(r.randint(1, 8)))
        new = "\n".join(r.choice(self.p.code) for _ in range(r.randint(1, 10)))
        if k == 2:
            return {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
        return {"command": "create", "path": path, "file_text": old + "\n" + new + "\n"}

    def assistant(self, repo):
        r = self.rng
        thought = ""
        if r.random() < 0.55:
            thought = " ".join(r.choice(self.p.sentences) for _ in range(r.randint(1, 4)))
        if r.random() < 0.65:
            name, args = "execute_bash", {"command": r.choice(self.p.commands)}
        else:
            name, args = "str_replace_editor", self.editor_args(repo)
        cid = self.call_id()
        msg = {"content": thought, "function_call": None, "name": None, "role": "assistant",
               "tool_call_id": None,
               "tool_calls": [{"function": {"arguments": json.dumps(args, separators=(",", ":")),
                                            "name": name},
                               "id": cid, "index": None, "type": "function"}]}
        return msg, name, cid

    def tool(self, repo, name, cid):
        return {"content": self.observation(repo), "function_call": None, "name": name,
                "role": "tool", "tool_call_id": cid, "tool_calls": None}

    @staticmethod
    def plain(role, text):
        return {"content": text, "function_call": None, "name": None, "role": role,
                "tool_call_id": None, "tool_calls": None}

    def row(self):
        r = self.rng
        repo = r.choice(REPOS)
        msgs = [self.plain("system", SYSTEM),
                self.plain("user", f"<uploaded_files>\n/workspace/{repo}\n</uploaded_files>\n"
                                   f"I've uploaded a python code repository in the directory "
                                   f"{repo}. " + r.choice(self.p.tasks))]
        for _ in range(max(4, int(r.gauss(30, 8)))):
            a, name, cid = self.assistant(repo)
            msgs.append(a)
            msgs.append(self.tool(repo, name, cid))
        msgs.append(self.plain("assistant", " ".join(r.choice(self.p.sentences) for _ in range(5))))
        self.n += 1
        return {"instance_id": f"{repo.replace('__', '-', 1).split('__')[0]}-{self.n}_0",
                "run_id": "gpt-4o-2024-08-06_maxiter_50_N_v2.1-no-hint-train-t0-run_1",
                "resolved": r.random() < 0.4, "messages": msgs, "tools": self.tools}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=512)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    target = int(a.size_mb * 1024 * 1024)
    maker = RowMaker(a.seed)
    written = 0
    with open(a.out, "w", encoding="utf-8", newline="\n") as f:
        while written < target:
            line = json.dumps(maker.row(), ensure_ascii=False) + "\n"
            f.write(line)
            written += len(line.encode("utf-8")) if not line.isascii() else len(line)
    print(f"gen_chat: {a.out}: {maker.n} rows, {written / 1048576:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
