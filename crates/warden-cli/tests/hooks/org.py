"""An organisation's hook, as a machine's managed settings wire it: a write to a file named for
review waits for a person, and its PermissionRequest hook signs off the ones named signed."""
import json
import sys

data = json.load(sys.stdin)
event = data["hook_event_name"]
path = (data.get("tool_input") or {}).get("file_path", "")


def answer(specific):
    specific["hookEventName"] = event
    print(json.dumps({"hookSpecificOutput": specific}))


if event == "PreToolUse" and "review" in path:
    answer({"permissionDecision": "ask",
            "permissionDecisionReason": "the organisation reviews these"})
elif event == "PermissionRequest" and "signed" in path:
    answer({"decision": {"behavior": "allow"}})
