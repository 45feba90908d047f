#!/bin/bash
# A PreToolUse hook as Claude Code's users write them: it appends what it was given to
# $HOOK_LOG, and refuses (exit 2, the reason on standard error) any command holding "forbidden".
input=$(cat)
[ -n "$HOOK_LOG" ] && printf '%s\n' "$input" >> "$HOOK_LOG"
case "$input" in
  *forbidden*)
    echo "commands holding 'forbidden' are not run here" >&2
    exit 2
    ;;
esac
exit 0
