"""make-delegation.py - writes delegation.json and delegation-nested.json (SOURCE.txt says from what)."""
# Builds the delegation fixtures from OpenHands' documented serialization
# (event_to_dict key order; see tests/data/openhands/SOURCE.txt).
import json, datetime, sys

class Stream:
    def __init__(self, t0):
        self.ev = []; self.t = t0
    def at(self, secs):
        self.t += datetime.timedelta(seconds=secs)
        return self.t.isoformat()
    def add(self, secs, **kv):
        d = {"id": len(self.ev), "timestamp": self.at(secs)}
        d.update(kv)
        self.ev.append(d)
        return d["id"]

def tcm(fn, call_id, rid, content, args, pin, pout):
    return {"function_name": fn, "tool_call_id": call_id,
            "model_response": {"id": rid, "created": 1737404000, "model": "claude-3-5-sonnet-20241022",
                               "object": "chat.completion",
                               "choices": [{"finish_reason": "tool_calls", "index": 0,
                                            "message": {"content": content, "role": "assistant",
                                                        "tool_calls": [{"index": 1, "function": {"arguments": json.dumps(args), "name": fn},
                                                                        "id": call_id, "type": "function"}]}}],
                               "usage": {"completion_tokens": pout, "prompt_tokens": pin, "total_tokens": pin + pout}},
            "total_calls_in_response": 1}

def state(s, secs, st, src="environment"):
    s.add(secs, source=src, message="", observation="agent_state_changed", content="", extras={"agent_state": st, "reason": ""})

def system(s, secs, agent):
    s.add(secs, source="agent", message="You are OpenHands agent, a helpful AI assistant...", action="system",
          args={"content": "You are OpenHands agent, a helpful AI assistant that can interact with a computer to solve tasks.",
                "tools": [{"type": "function", "function": {"name": "execute_bash"}},
                          {"type": "function", "function": {"name": "delegate_to_browsing_agent"}},
                          {"type": "function", "function": {"name": "finish"}}],
                "openhands_version": "0.62.0", "agent_class": agent})

def user(s, secs, text):
    return s.add(secs, source="user", message=text, action="message",
                 args={"content": text, "file_urls": [], "image_urls": [], "wait_for_response": False})

def run(s, secs, dur, cmd, call, rid, pin, pout, text, code=0):
    m = tcm("execute_bash", call, rid, text, {"command": cmd}, pin, pout)
    a = s.add(secs, source="agent", message="Running command: " + cmd, action="run", tool_call_metadata=m,
              args={"command": cmd, "is_input": False, "thought": text, "blocking": False, "hidden": False,
                    "confirmation_state": "confirmed"})
    s.add(dur, source="agent", message="Command `%s` executed with exit code %d." % (cmd, code), cause=a,
          observation="run", tool_call_metadata=m, content="",
          extras={"command": cmd, "metadata": {"exit_code": code, "pid": -1, "username": "openhands",
                                               "hostname": "sandbox", "working_dir": "/workspace",
                                               "py_interpreter_path": "/usr/bin/python", "prefix": "", "suffix": ""},
                  "hidden": False})

def delegate(s, secs, task, call, rid, pin, pout, agent="BrowsingAgent", fn="delegate_to_browsing_agent", tm=True):
    m = tcm(fn, call, rid, "Let me ask the browsing agent.", {"task": task}, pin, pout) if tm else None
    kv = dict(source="agent", message="I'm asking %s for help with this task." % agent, action="delegate")
    if m:
        kv["tool_call_metadata"] = m
    kv["args"] = {"agent": agent, "inputs": {"task": task}, "thought": ""}
    a = s.add(secs, **kv)
    if agent != "BrowsingAgent":          # the delegate controller's _add_system_message
        system(s, 0.001, agent)           # (BrowsingAgent has no prompt manager: none)
    user(s, 0.002, "TASK: " + task)       # AgentController._handle_action posts it
    state(s, 0.003, "running")            # the delegate set to RUNNING
    return m

def browse(s, secs, dur, actions, url, msg="", error=False):
    a = s.add(secs, source="agent", message="I am interacting with the browser:\n```\n%s\n```" % actions,
              action="browse_interactive",
              args={"browser_actions": actions, "thought": "In order to accomplish my goal I need to " + actions,
                    "browsergym_send_msg_to_user": msg, "return_axtree": False})
    s.add(dur, source="environment", message="Visited " + url, cause=a, observation="browse",
          content="[page text]" if not error else "Error: net::ERR_CONNECTION_TIMED_OUT",
          extras={"url": url, "trigger_by_action": "browse_interactive", "error": error,
                  "goal_image_urls": [], "open_pages_urls": [url], "active_page_index": 0,
                  "last_browser_action": actions, "last_browser_action_error": "", "focused_element_bid": ""})

def finish_delegate(s, answer):
    s.add(0.8, source="agent", message=answer, action="message",
          args={"content": answer, "file_urls": None, "image_urls": None, "wait_for_response": False})
    s.add(0.01, source="agent", message="All done! What's next on the agenda?", action="finish",
          args={"final_thought": "", "outputs": {"content": answer}, "thought": ""})
    state(s, 0.01, "finished")

def delegate_obs(s, secs, m, agent, answer=None):
    kv = dict(source="agent", message="", observation="delegate")
    if m:
        kv["tool_call_metadata"] = m
    if answer is None:
        kv["content"] = "Delegated agent finished with result:\n\n%s encountered an error during execution." % agent
        kv["extras"] = {"outputs": {}}
    else:
        kv["content"] = "Delegated agent finished with result:\n\n%s finishes task with content: %s" % (agent, answer)
        kv["extras"] = {"outputs": {"content": answer}}
    s.add(secs, **kv)

def finish(s, secs, call, rid, pin, pout, text):
    m = tcm("finish", call, rid, text, {"message": text}, pin, pout)
    s.add(secs, source="agent", message=text, action="finish", tool_call_metadata=m,
          args={"final_thought": text, "outputs": {}, "thought": ""})
    state(s, 0.01, "finished")

def sequence():
    s = Stream(datetime.datetime(2025, 1, 20, 20, 29, 13, 519638))
    state(s, 0, "loading")
    system(s, 18.6, "CodeActAgent")
    user(s, 0.05, "How many stars does All-Hands-AI/OpenHands have on GitHub, and what is its license? Write both to /workspace/repo.txt.")
    state(s, 0.02, "running")
    run(s, 2.7, 0.41, "ls /workspace", "toolu_01", "chatcmpl-1", 3439, 61, "Let me look at the workspace first.")
    m = delegate(s, 3.1, "Find the number of GitHub stars of https://github.com/All-Hands-AI/OpenHands", "toolu_02", "chatcmpl-2", 3560, 88)
    browse(s, 2.4, 1.9, "goto('https://github.com/All-Hands-AI/OpenHands')", "https://github.com/All-Hands-AI/OpenHands")
    browse(s, 3.3, 0.2, "send_msg_to_user('The repository has 65.2k stars.')", "https://github.com/All-Hands-AI/OpenHands",
           msg="The repository has 65.2k stars.")
    finish_delegate(s, "The repository has 65.2k stars.")
    delegate_obs(s, 0.02, m, "BrowsingAgent", "The repository has 65.2k stars.")
    run(s, 2.9, 0.38, "echo 'stars: 65.2k' > /workspace/repo.txt", "toolu_03", "chatcmpl-3", 3701, 74, "Now I will write the count.")
    m = delegate(s, 2.6, "Find the license of https://github.com/All-Hands-AI/OpenHands", "toolu_04", "chatcmpl-4", 3822, 80)
    browse(s, 2.2, 30.0, "goto('https://github.com/All-Hands-AI/OpenHands/blob/main/LICENSE')",
           "https://github.com/All-Hands-AI/OpenHands/blob/main/LICENSE", error=True)
    state(s, 0.05, "error")
    delegate_obs(s, 0.02, m, "BrowsingAgent")
    run(s, 3.4, 0.52, "echo 'license: unknown' >> /workspace/repo.txt", "toolu_05", "chatcmpl-5", 3946, 70, "The browsing agent failed; I will note that.")
    finish(s, 2.1, "toolu_06", "chatcmpl-6", 4090, 45, "I wrote the star count to /workspace/repo.txt; the license could not be read.")
    return s.ev

def nested():
    # main CodeActAgent -> CodeActAgent (delegate_level 1) -> BrowsingAgent (level 2);
    # then a delegate that never returns: the stream ends while it works.
    s = Stream(datetime.datetime(2025, 1, 21, 9, 0, 0, 0))
    state(s, 0, "loading")
    system(s, 1.0, "CodeActAgent")
    user(s, 0.05, "Update the README with the project's current star count.")
    state(s, 0.02, "running")
    m1 = delegate(s, 2.0, "Work out the current star count and report it", "toolu_11", "chatcmpl-11", 3300, 70,
                  agent="CodeActAgent", fn="delegate")
    m2 = delegate(s, 2.5, "Read the star count from https://github.com/All-Hands-AI/OpenHands", "toolu_12", "chatcmpl-12", 3350, 66)
    browse(s, 2.0, 1.5, "goto('https://github.com/All-Hands-AI/OpenHands')", "https://github.com/All-Hands-AI/OpenHands")
    browse(s, 2.8, 0.2, "send_msg_to_user('65.2k stars')", "https://github.com/All-Hands-AI/OpenHands", msg="65.2k stars")
    finish_delegate(s, "65.2k stars")
    delegate_obs(s, 0.02, m2, "BrowsingAgent", "65.2k stars")
    run(s, 2.2, 0.3, "date -u +%F", "toolu_13", "chatcmpl-13", 3480, 40, "Let me note the date.")
    s.add(1.9, source="agent", message="65.2k stars as of today", action="finish",
          tool_call_metadata=tcm("finish", "toolu_14", "chatcmpl-14", "Done.", {"message": "65.2k stars"}, 3560, 30),
          args={"final_thought": "65.2k stars as of today", "outputs": {"content": "65.2k stars as of today"}, "thought": ""})
    state(s, 0.01, "finished")
    delegate_obs(s, 0.02, m1, "CodeActAgent", "65.2k stars as of today")
    run(s, 2.4, 0.2, "sed -i 's/Stars: .*/Stars: 65.2k/' README.md", "toolu_15", "chatcmpl-15", 3420, 58, "Now update the README.")
    delegate(s, 2.2, "Check that the README renders on GitHub", "toolu_16", "chatcmpl-16", 3530, 62)
    browse(s, 2.1, 1.1, "goto('https://github.com/All-Hands-AI/OpenHands#readme')", "https://github.com/All-Hands-AI/OpenHands#readme")
    return s.ev

def dump(evs, path):
    with open(path, "w") as f:
        json.dump(evs, f, indent=2, ensure_ascii=False)
        f.write("\n")

dump(sequence(), sys.argv[1] + "/delegation.json")
dump(nested(), sys.argv[1] + "/delegation-nested.json")
