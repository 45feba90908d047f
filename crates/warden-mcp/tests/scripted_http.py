"""A scripted streamable HTTP MCP server on loopback, for what a real one will not do on demand:
report the headers it was sent, answer with an event stream, send more than warden takes, move
elsewhere, ask for input without being allowed to.

It prints its port on the first line of standard output, then serves until killed. The path
picks the behaviour:
  /mcp        JSON answers; the tool `headers` returns the request's headers
  /events     the same, each answer as a server-sent event
  /huge       tools/call answers with 9 MB of text
  /redirect   every POST is sent to /mcp of another host (307)
  /elicit     tools/call first asks the client for input (elicitation/create) on the event
              stream of the call, then returns what the client answered
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SESSION = "scripted-session-1"
PENDING = {}
LOCK = threading.Lock()


def tool(name):
    return {"name": name, "description": "scripted", "inputSchema": {"type": "object"}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", kind="application/json", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Mcp-Session-Id", SESSION)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def answer(self, message):
        body = json.dumps(message).encode()
        if self.path == "/events":
            body = b"event: message\ndata: " + body + b"\n\n"
            self.send(200, body, "text/event-stream")
        else:
            self.send(200, body)

    def do_GET(self):
        self.send(405, b"", "text/plain")

    def do_DELETE(self):
        self.send(200, b"", "text/plain")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/redirect":
            self.send(307, b"", "text/plain", [("Location", "http://127.0.0.2:9/mcp")])
            return
        method = message.get("method")
        ident = message.get("id")
        if "result" in message or "error" in message:
            # The client's answer to our elicitation: handed to the waiting call.
            with LOCK:
                waiter = PENDING.pop(ident, None)
            if waiter:
                waiter["answer"] = message
                waiter["event"].set()
            self.send(202, b"", "text/plain")
            return
        if ident is None:
            self.send(202, b"", "text/plain")
            return
        if method == "initialize":
            self.answer({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted-http", "version": "1"},
            }})
        elif method == "tools/list":
            self.answer({"jsonrpc": "2.0", "id": ident, "result": {
                "tools": [tool("headers"), tool("huge"), tool("ask")]}})
        elif method == "tools/call" and self.path == "/huge":
            text = "x" * (9 * 1024 * 1024)
            self.answer({"jsonrpc": "2.0", "id": ident, "result": {
                "content": [{"type": "text", "text": text}]}})
        elif method == "tools/call" and self.path == "/elicit":
            self.elicit(ident)
        elif method == "tools/call":
            seen = {k.lower(): v for k, v in self.headers.items()}
            self.answer({"jsonrpc": "2.0", "id": ident, "result": {
                "content": [{"type": "text", "text": json.dumps(seen)}]}})
        else:
            self.answer({"jsonrpc": "2.0", "id": ident,
                         "error": {"code": -32601, "message": "no such method"}})

    def elicit(self, ident):
        """Ask on the call's own event stream, wait for the client's POSTed answer, report it."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Connection", "close")
        self.end_headers()
        waiter = {"event": threading.Event()}
        with LOCK:
            PENDING["ask-1"] = waiter
        request = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Which colour?",
            "requestedSchema": {"type": "object", "properties": {
                "colour": {"type": "string", "default": "green"}}},
        }}
        self.wfile.write(b"event: message\ndata: " + json.dumps(request).encode() + b"\n\n")
        self.wfile.flush()
        waiter["event"].wait(20)
        answer = waiter.get("answer", {"error": {"message": "no answer"}})
        result = {"jsonrpc": "2.0", "id": ident, "result": {
            "content": [{"type": "text", "text": json.dumps(answer)}]}}
        self.wfile.write(b"event: message\ndata: " + json.dumps(result).encode() + b"\n\n")
        self.wfile.flush()
        self.close_connection = True


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
