"""The MCP Python SDK's own client, speaking to `warden mcp serve`: it lists warden's tools and
makes the calls given (JSON: [[tool, arguments], ...]), printing one JSON line per call:
{"tool", "isError", "text", "structured", "progress"}.

Arguments: WARDEN CALLS [FLAGS [MODE [URL]]] — FLAGS (JSON) are added to `warden mcp serve`;
MODE is the SDK's: "legacy" (the initialize handshake, questions asked during a call),
"2026-07-28" (stateless requests, questions answered by calling again) or "auto"; with URL the
client connects over streamable HTTP to a `warden mcp serve --http` already running.

With WARDEN_TEST_APPROVE (once, session, always, deny...) the client takes forms and answers
warden's questions so, printing each as {"asked", "choices"}."""
import asyncio
import json
import os
import sys

from mcp import StdioServerParameters, types
from mcp.client.client import Client


ANSWER = os.environ.get("WARDEN_TEST_APPROVE")


async def approve(context, params):
    """The client's user, asked by warden: answers as WARDEN_TEST_APPROVE says."""
    schema = params.requested_schema or {}
    choices = [c.get("const") for c in schema.get("properties", {}).get("answer", {}).get("oneOf", [])]
    print(json.dumps({"asked": params.message, "choices": choices}), flush=True)
    content = {"answer": ANSWER}
    if ANSWER == "deny":
        content["message"] = "not on a Friday"
    return types.ElicitResult(action="accept", content=content)


async def main():
    warden, calls = sys.argv[1], json.loads(sys.argv[2])
    flags = json.loads(sys.argv[3]) if len(sys.argv) > 3 else []
    mode = sys.argv[4] if len(sys.argv) > 4 else "legacy"
    url = sys.argv[5] if len(sys.argv) > 5 else None
    server = url or StdioServerParameters(command=warden, args=["mcp", "serve", *flags],
                                          env=dict(os.environ))
    callback = approve if ANSWER else None
    async with Client(server, mode=mode, elicitation_callback=callback) as client:
        tools = await client.list_tools()
        schemas = {t.name: t.input_schema for t in tools.tools}
        print(json.dumps({"tools": sorted(schemas), "schemas": schemas}), flush=True)
        for tool, arguments in calls:
            progress = []

            async def on_progress(done, total, message, progress=progress):
                progress.append([done, message])

            result = await client.call_tool(tool, arguments, progress_callback=on_progress)
            text = "".join(getattr(c, "text", "") for c in result.content)
            print(json.dumps({"tool": tool, "isError": bool(result.is_error), "text": text,
                              "structured": result.structured_content,
                              "progress": progress}), flush=True)


asyncio.run(main())
