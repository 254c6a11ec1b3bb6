#!/usr/bin/env python3
"""reference.py - the Python a user would write instead of `atr convert --from openai-chat`.

Same work as atr, step for step: stream the NDJSON rows, json.loads each,
render every message as atr does ("<|role|>\\n" + text + "\\n", an assistant's
text being its content plus one "name(arguments)" line per tool call),
estimate tokens with a port of atr's pseudo-tokenizer (the automaton in
src/trace/tokens.c: same classes, widths and splits, as one bytes regex), hash chained blocks of 16
tokens, emit one llm step per assistant message (input = every earlier
message, output = its reply) and one tool step per tool call (arguments
parsed from their JSON string), and write atr-trace v1 lines with json.dumps
using the compact "prefix" form atr writes by default.

It is meant to be a fair, reasonably efficient Python version: one regex
pass per message (the tokens of a message never depend on what follows, so
a conversation is tokenised and hashed incrementally, never re-tokenising
its prefix per call), stdlib only, buffered output.

One difference by necessity: atr hashes blocks with XXH3 (libxxhash), but
the xxhash module is not installable here (no PyPI access), so blocks are
hashed with hashlib.blake2b (8-byte digest, keyed with the parent hash),
chained exactly as atr chains them. The ids differ in value, not in number
or structure; blake2b in C is about as costly per block as a Python call.

usage: reference.py IN OUT [--block-size N]
"""
import argparse
import hashlib
import json
import re
import sys

MASK = (1 << 53) - 1

# Token grammar of src/trace/tokens.c (its transition() is the spec), as one
# bytes regex; Python's re takes the first alternative that matches, so the
# order is what makes it agree with the automaton:
# - a word is upper-case letters then lower-case letters (a lower->upper
#   change starts a new word), cut every 8 bytes; a lone ' ' or '_' directly
#   before a letter is the word's first byte (and counts in its 8). After a
#   cut the word goes on as a new token, which the same alternatives match.
#   For each cap n the upper-case run is tried longest first, so
#   "ABCDEFGHIJ" -> "ABCDEFGH", "IJ" and "ABCdefghij" -> "ABCdefgh", "ij".
# - blanks (' ', '\t') 16 per token; only a lone ' ' joins a word, so
#   "  foo" -> "  ", "foo" (the word alternatives come first for " foo").
# - '_' before a letter starts a word, else it is a symbol: symbols 2 per
#   token ('_' may be either), so "__init" -> "__", "init".
# - digits 3, newlines (\r, \n) 2, a UTF-8 lead or stray continuation byte
#   plus up to 3 continuation bytes.


def _word(n):
    """A word of at most n letters: [A-Z]*[a-z]*, the longest upper run first."""
    alts = [rb"[a-z]{1,%d}" % n, rb"[A-Z][a-z]{1,%d}" % (n - 1)] if n > 1 else [rb"[a-z]"]
    alts += [rb"[A-Z]{%d}" % k + (rb"[a-z]{0,%d}" % (n - k) if k < n else b"")
             for k in range(n, 1, -1)]
    return rb"|".join(alts + [rb"[A-Z]"])


_SYM = rb"[^A-Za-z0-9 \t\r\n\x80-\xff]"       # symbols, '_' included
TOKEN = re.compile(
    _word(8) +                                  # word
    rb"|[ _](?:" + _word(7) + rb")" +           # " word", "_word"
    rb"|[ \t]{1,16}"                            # blanks, 16 per token
    rb"|[0-9]{1,3}"                             # digit groups of 3
    rb"|[\r\n]{1,2}"                            # newlines, 2 per token
    rb"|" + _SYM + _SYM + rb"?"                 # symbols, 2 per token
    rb"|[\x80-\xff][\x80-\xbf]{0,3}"            # one UTF-8 code point
)


def count_tokens(data):
    return len(TOKEN.findall(data))


_RUNS = {}


def _runs(bs):
    """The "up to n tokens" regexes for n = 1..bs, compiled once per block size."""
    if bs not in _RUNS:
        _RUNS[bs] = [None] + [_upto(n) for n in range(1, bs + 1)]
    return _RUNS[bs]


def _h(data, parent):
    """64-bit hash of data seeded with the parent hash (XXH3_64bits_withSeed in atr)."""
    key = parent.to_bytes(8, "little")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8, key=key).digest(), "little")


def use_xxh3():
    """Validation only (--xxh3): XXH3 through ctypes, so the output can be
    compared byte for byte with atr's; not what the benchmark times."""
    import ctypes
    import ctypes.util
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    fn = lib.XXH3_64bits_withSeed
    fn.restype = ctypes.c_uint64
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    global _h
    _h = lambda data, parent: fn(data, len(data), parent)  # noqa: E731


def _upto(n):
    """Regex for the next 1..n tokens; the atomic group keeps each token as
    TOKEN splits it (no backtracking into a shorter alternative)."""
    return re.compile(rb"(?>" + TOKEN.pattern + rb"){1,%d}" % n)


class BlockHash:
    """atr_blockhash: every block_size tokens close a block chained on its parent.

    A piece is cut into runs of block_size tokens by one findall of a regex
    matching up to block_size tokens, so Python handles blocks, not tokens:
    only the first run (topping up the open block) and the last (partial)
    one are counted token by token.

    Each piece is tokenised on its own from the start, as atr does. atr
    closes a full block lazily, when the next token starts (possibly in the
    next piece); until then the block's id is its partial id, which is the
    same value, so closing it as soon as it is full gives the same ids."""

    __slots__ = ("bs", "tokens", "chain", "in_block", "open_hash", "ids", "runs")

    def __init__(self, bs):
        self.bs, self.tokens, self.chain, self.in_block = bs, 0, 0, 0
        self.open_hash, self.ids = 0, []
        self.runs = _runs(bs)

    def _close(self, data):
        self.chain = self.open_hash = _h(data, self.open_hash)
        self.ids.append(self.chain & MASK)
        self.in_block = 0

    def _partial(self, data, n):
        self.open_hash = _h(data, self.open_hash)
        self.in_block += n
        self.tokens += n

    def feed(self, data):
        if not data:
            return
        if self.in_block == 0:
            self.open_hash = self.chain
        pos = 0
        if self.in_block:
            need = self.bs - self.in_block
            m = self.runs[need].match(data)
            pos = m.end()
            n = need if pos < len(data) else count_tokens(m.group())
            if n < need:
                self._partial(data, n)
                return
            self.tokens += need
            self._close(m.group())
        runs = self.runs[self.bs].findall(data, pos)
        if not runs:
            return
        last = runs.pop()
        if runs:
            # The hot loop: one hash per full block, chained.
            h, ids, hash_ = self.open_hash, self.ids, _h
            for r in runs:
                h = hash_(r, h)
                ids.append(h & MASK)
            self.chain = self.open_hash = h
            self.in_block = 0
            self.tokens += self.bs * len(runs)
        n = count_tokens(last)
        if n == self.bs:
            self.tokens += n
            self._close(last)
        else:
            self._partial(last, n)

    def add(self, role, text):
        self.feed(b"<|" + role.encode() + b"|>\n")
        self.feed(text)
        self.feed(b"\n")

    def prompt_ids(self):
        if self.in_block:
            return self.ids + [self.open_hash & MASK]
        return list(self.ids)


def render(msg):
    """A message's text as atr renders it: content, then "name(arguments)" per call."""
    c = msg.get("content")
    if isinstance(c, list):
        parts = [p if isinstance(p, str) else p.get("text") for p in c]
        c = "\n".join(p for p in parts if isinstance(p, str))
    elif not isinstance(c, str):
        c = ""
    calls = msg.get("tool_calls") or []
    if not calls:
        return c
    out = [c]
    for call in calls:
        fn = call.get("function") or call
        name, args = fn.get("name"), fn.get("arguments")
        if not name:
            continue
        if out[-1] and not out[-1].endswith("\n"):
            out.append("\n")
        if not isinstance(args, str):
            args = "" if args is None else json.dumps(args, separators=(",", ":"))
        out.append(f"{name}({args})")
    return "".join(out)


BASH = {"execute_bash", "bash", "shell", "run", "terminal", "run_command",
        "execute_command", "cmd"}
EDITOR = {"str_replace_editor", "str_replace_based_edit_tool", "editor", "file_editor",
          "edit_file"}
EXIT_MARKS = ("[Command finished with exit code ", "[The command completed with exit code ",
              "<returncode>")
EXIT_CODE = re.compile(r"-?([0-9]{1,9})")


def tool_step(i, call, meta):
    """One tool step per call, mapped as atr's openai-chat reader maps them;
    None for calls that run nothing (finish, submit, think)."""
    fn = call.get("function")
    if not isinstance(fn, dict):
        fn = call
    name, raw = fn.get("name"), fn.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        args = None
    if not isinstance(args, dict):
        args = {}
    if name in BASH:
        cmd = args.get("command")
        if not isinstance(cmd, str):
            cmd = args.get("cmd") if isinstance(args.get("cmd"), str) else ""
        tool = "bash_input" if args.get("is_input") in (True, "true") else "bash"
        return {"i": i, "kind": "tool", "tool": tool, "command": cmd}
    if name in EDITOR:
        s = {"i": i, "kind": "tool", "tool": "editor"}
        for key, field in (("command", "action"), ("path", "path")):
            if isinstance(args.get(key), str):
                s[field] = args[key]
        return s
    if name in ("finish", "submit"):
        meta["finish_calls"] = meta.get("finish_calls", 0) + 1
        return None
    if name == "think":
        return None
    s = {"i": i, "kind": "tool", "tool": name}
    if raw is not None:
        s["arguments"] = raw
    return s


def exit_code(text):
    """The exit code a shell observation reports in its last bracketed marker."""
    for mark in EXIT_MARKS:
        k = text.rfind(mark)
        if k >= 0:
            m = EXIT_CODE.match(text, k + len(mark))
            if m:
                return int(m.group())
    return None


def row_meta(row):
    meta = {}
    model = row.get("model")
    for key, v in (("model", model if isinstance(model, str) else row.get("model_name")),
                   ("instance_id", row.get("instance_id")), ("run_id", row.get("run_id")),
                   ("exit_status", row.get("exit_status"))):
        if isinstance(v, str) and v:
            meta[key] = v
    res = row.get("resolved")
    if not isinstance(res, bool):
        res = row.get("target")
    if isinstance(res, bool):
        meta["outcome"] = "resolved" if res else "unresolved"
    return meta


def llm_step(steps, h, reply, prev):
    """An llm step for a model call, its ids as a prefix of the previous call's."""
    ids = h.prompt_ids()
    step = {"i": len(steps), "kind": "llm", "input_tokens": h.tokens,
            "output_tokens": count_tokens(reply)}
    shared = 0
    if prev:
        # Ids only grow within a conversation: the shared prefix is the
        # previous call's closed blocks (its partial block never repeats).
        prev_i, prev_ids = prev
        shared = min(len(prev_ids), len(ids))
        while shared and prev_ids[shared - 1] != ids[shared - 1]:
            shared -= 1
        if shared:
            step["prefix"] = {"step": prev_i, "blocks": shared}
    step["hash_ids"] = ids[shared:]
    steps.append(step)
    return step["i"], ids


def convert_row(row, lineno, bs):
    """One row -> the atr-trace dict."""
    h = BlockHash(bs)
    meta = row_meta(row)
    steps, pending, prev = [], {}, None
    tools = row.get("tools")
    if isinstance(tools, list) and tools:
        # The tool schemas are part of every prompt, ahead of the messages.
        h.add("system", json.dumps(tools, ensure_ascii=False,
                                   separators=(",", ":")).encode("utf-8"))
    for msg in row.get("messages") or []:
        role = msg.get("role") or "user"
        text = render(msg)
        if role == "assistant":
            data = text.encode("utf-8")
            prev = llm_step(steps, h, data, prev)
            h.add(role, data)
            pending = {}
            for call in msg.get("tool_calls") or []:
                s = tool_step(len(steps), call, meta)
                if s:
                    steps.append(s)
                    pending[call.get("id")] = s
            continue
        if role == "tool" and pending:
            s = pending.pop(msg.get("tool_call_id"), None)
            if s is None:
                s = pending.pop(next(iter(pending)))
            if s["tool"] == "bash":
                code = exit_code(text)
                if code is not None:
                    s["exit_code"] = code
        if text:
            h.add(role, text.encode("utf-8"))
    tid = row.get("instance_id") or f"{lineno - 1}"
    return {"format": "atr-trace/1", "trace_id": f"openai-chat/{tid}", "source": "openai-chat",
            "start_ms": 0, "block_size": bs, "meta": meta, "steps": steps}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--xxh3", action="store_true",
                    help="hash with libxxhash via ctypes (to diff against atr)")
    a = ap.parse_args()
    if a.xxh3:
        use_xxh3()
    traces = 0
    with open(a.input, "rb") as f, open(a.output, "w", encoding="utf-8",
                                        buffering=1 << 20) as out:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            t = convert_row(json.loads(line), lineno, a.block_size)
            out.write(json.dumps(t, ensure_ascii=False, separators=(",", ":")))
            out.write("\n")
            traces += 1
    print(f"reference: {traces} traces", file=sys.stderr)


if __name__ == "__main__":
    main()
