"""A team's hook in Claude Code's shapes, for every event it is wired to: it decides by the
file a call writes, adds context after a write, sends the model back once when it stops, and
logs each event's input to $HOOK_LOG."""
import json
import os
import sys

data = json.load(sys.stdin)
with open(os.environ["HOOK_LOG"], "a") as log:
    log.write(json.dumps(data) + "\n")
event = data["hook_event_name"]
tool_input = data.get("tool_input") or {}
path = tool_input.get("file_path", "")


def answer(specific=None, **top):
    if specific is not None:
        specific["hookEventName"] = event
        top["hookSpecificOutput"] = specific
    print(json.dumps(top))
    sys.exit(0)


def decide(decision, reason):
    answer({"permissionDecision": decision, "permissionDecisionReason": reason})


if event == "PreToolUse":
    if path.endswith("ask.txt"):
        decide("ask", "a person should look at this one")
    if path.endswith("deny.txt"):
        decide("deny", "not this file")
    if path.endswith("allow.txt"):
        decide("allow", "the team allows it")
    if path.endswith("moved.txt"):
        answer({"updatedInput": {"file_path": path.replace("moved.txt", "redirected.txt"),
                                 "content": tool_input.get("content", "")}})
    if data.get("tool_name") == "Read":
        decide("allow", "reads are fine")
    if tool_input.get("command") == "echo let me in":
        decide("allow", "hooks may not lift a deny rule")
elif event == "PermissionRequest":
    if path.endswith("granted.txt"):
        answer({"decision": {"behavior": "allow"}})
    if path.endswith("refused.txt"):
        answer({"decision": {"behavior": "deny", "message": "the team refuses refused.txt"}})
elif event == "PostToolUse":
    if path:
        answer({"additionalContext": "the formatter ran on " + os.path.basename(path)})
elif event == "Stop":
    if not data["stop_hook_active"]:
        answer(decision="block", reason="run the tests before you stop")
elif event == "UserPromptSubmit":
    if "secret" in data["prompt"]:
        print("prompts may not hold secrets", file=sys.stderr)
        sys.exit(2)
    print("the team's conventions: tabs, not spaces")
sys.exit(0)
