"""An MCP server over standard input and output that speaks protocol 2024-11-05 whatever it is
offered, and lists its tools over two pages (a cursor), for warden's client tests."""
import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def tool(name):
    return {"name": name, "description": "page tool", "inputSchema": {"type": "object"}}


for line in sys.stdin:
    message = json.loads(line)
    ident, method = message.get("id"), message.get("method")
    if method == "initialize":
        sys.stderr.write("offered " + message["params"]["protocolVersion"] + "\n")
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "older", "version": "1"}}})
    elif method == "tools/list":
        cursor = (message.get("params") or {}).get("cursor")
        if cursor is None:
            send({"jsonrpc": "2.0", "id": ident,
                  "result": {"tools": [tool("first")], "nextCursor": "page-2"}})
        else:
            send({"jsonrpc": "2.0", "id": ident,
                  "result": {"tools": [tool("second-" + cursor)]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "content": [{"type": "text", "text": "called " + message["params"]["name"]}]}})
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
