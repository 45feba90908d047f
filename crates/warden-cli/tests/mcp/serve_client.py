"""The MCP Python SDK's own client, speaking to `warden mcp serve` over stdio: it lists warden's
tools and makes the calls named on the command line (JSON: [[tool, arguments], ...]), printing
one JSON line per call: {"tool", "isError", "text"}. A third argument, JSON, adds flags to
`warden mcp serve`. With WARDEN_TEST_APPROVE (yes or no) the client takes forms, and answers
warden's approvals so, printing each question as {"asked"}."""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


ANSWER = os.environ.get("WARDEN_TEST_APPROVE")


async def approve(context, params):
    """The client's user, asked by warden: answers as WARDEN_TEST_APPROVE says (yes or no)."""
    print(json.dumps({"asked": params.message}), flush=True)
    return types.ElicitResult(action="accept", content={"approve": ANSWER == "yes"})


async def main():
    warden, calls = sys.argv[1], json.loads(sys.argv[2])
    flags = json.loads(sys.argv[3]) if len(sys.argv) > 3 else []
    params = StdioServerParameters(command=warden, args=["mcp", "serve", *flags],
                                   env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        callback = approve if ANSWER else None
        async with ClientSession(read, write, elicitation_callback=callback) as session:
            await session.initialize()
            tools = await session.list_tools()
            print(json.dumps({"tools": sorted(t.name for t in tools.tools)}), flush=True)
            for tool, arguments in calls:
                result = await session.call_tool(tool, arguments)
                text = "".join(getattr(c, "text", "") for c in result.content)
                print(json.dumps({"tool": tool, "isError": bool(getattr(result, "is_error", None) or getattr(result, "isError", False)), "text": text}),
                      flush=True)


asyncio.run(main())
