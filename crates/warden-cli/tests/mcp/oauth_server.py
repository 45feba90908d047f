"""A streamable HTTP MCP server behind OAuth, scripted, on loopback: its protected resource
metadata, an authorization server that approves at once (302 to the client's redirect with a
code), dynamic registration, a token endpoint that checks PKCE and hands out a short-lived
token with a refresh token, and one tool for a bearer of a token it issued. Prints its port."""
import base64
import hashlib
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHALLENGES = {}
SCOPES = {}
VALID = set()
ADMIN = set()
# The refresh token works this many times (the first argument, default once): then it is
# revoked.
REFRESHED = []
MOST_REFRESHES = int(sys.argv[1]) if len(sys.argv) > 1 else 1


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def send(self, status, body=b"", kind="application/json", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def json(self, value, status=200):
        self.send(status, json.dumps(value).encode())

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            self.json({"resource": self.base() + "/mcp", "authorization_servers": [self.base()]})
        elif url.path == "/.well-known/oauth-authorization-server":
            self.json({"issuer": self.base(), "authorization_endpoint": self.base() + "/authorize",
                       "token_endpoint": self.base() + "/token",
                       "registration_endpoint": self.base() + "/register",
                       "code_challenge_methods_supported": ["S256"],
                       "token_endpoint_auth_methods_supported": ["none"]})
        elif url.path == "/authorize":
            query = dict(urllib.parse.parse_qsl(url.query))
            code = "code-%d" % (len(CHALLENGES) + 1)
            CHALLENGES[code] = query["code_challenge"]
            SCOPES[code] = query.get("scope", "")
            target = query["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": query["state"]})
            self.send(302, b"", "text/plain", [("Location", target)])
        else:
            self.send(405 if url.path == "/mcp" else 404, b"", "text/plain")

    def do_DELETE(self):
        self.send(200, b"", "text/plain")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        url = urllib.parse.urlparse(self.path)
        if url.path == "/register":
            self.json({"client_id": "client-1"}, 201)
        elif url.path == "/token":
            form = dict(urllib.parse.parse_qsl(body.decode()))
            if form.get("grant_type") == "authorization_code":
                digest = hashlib.sha256(form["code_verifier"].encode()).digest()
                challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
                if CHALLENGES.get(form.get("code")) != challenge:
                    self.json({"error": "invalid_grant"}, 400)
                    return
                if "mcp:admin" in SCOPES.get(form["code"], "").split():
                    VALID.add("tok-admin")
                    ADMIN.add("tok-admin")
                    self.json({"access_token": "tok-admin", "token_type": "Bearer",
                               "expires_in": 3600})
                    return
                VALID.add("tok-first")
                self.json({"access_token": "tok-first", "token_type": "Bearer",
                           "expires_in": 30, "refresh_token": "ref-secret"})
            elif form.get("grant_type") == "refresh_token" and form.get("refresh_token") == "ref-secret" \
                    and len(REFRESHED) < MOST_REFRESHES:
                REFRESHED.append(True)
                VALID.add("tok-renewed")
                self.json({"access_token": "tok-renewed", "token_type": "Bearer", "expires_in": 40})
            else:
                self.json({"error": "invalid_grant"}, 400)
        elif url.path == "/mcp":
            token = self.headers.get("Authorization", "").removeprefix("Bearer ")
            if token not in VALID:
                meta = self.base() + "/.well-known/oauth-protected-resource/mcp"
                self.send(401, b"", "text/plain",
                          [("WWW-Authenticate", 'Bearer resource_metadata="%s"' % meta)])
                return
            message = json.loads(body)
            ident, method = message.get("id"), message.get("method")
            if ident is None:
                self.send(202, b"", "text/plain")
            elif method == "initialize":
                self.json({"jsonrpc": "2.0", "id": ident, "result": {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "behind-oauth", "version": "1"}}})
            elif method == "tools/list":
                self.json({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
                    {"name": "whoami", "description": "Says who called.",
                     "inputSchema": {"type": "object"}},
                    {"name": "echo-token", "description": "Says the token it was sent.",
                     "inputSchema": {"type": "object"}},
                    {"name": "admin", "description": "Needs the scope mcp:admin.",
                     "inputSchema": {"type": "object"}},
                    {"name": "expire", "description": "Expires the caller's token.",
                     "inputSchema": {"type": "object"}}]}})
            elif method == "tools/call" and message["params"]["name"] == "expire":
                # The token the call came with expires now: the next request with it is refused.
                VALID.discard(token)
                self.json({"jsonrpc": "2.0", "id": ident, "result": {
                    "content": [{"type": "text", "text": "expired"}]}})
            elif method == "tools/call" and message["params"]["name"] == "admin" \
                    and token in ADMIN:
                self.json({"jsonrpc": "2.0", "id": ident, "result": {
                    "content": [{"type": "text", "text": "admin done"}]}})
            elif method == "tools/call" and message["params"]["name"] == "admin":
                meta = self.base() + "/.well-known/oauth-protected-resource/mcp"
                challenge = 'Bearer error="insufficient_scope", scope="mcp:admin", ' \
                    'resource_metadata="%s"' % meta
                self.send(403, b"", "text/plain", [("WWW-Authenticate", challenge)])
            elif method == "tools/call" and message["params"]["name"] == "echo-token":
                self.json({"jsonrpc": "2.0", "id": ident, "result": {
                    "content": [{"type": "text", "text": "your token is " + token}]}})
            elif method == "tools/call":
                self.json({"jsonrpc": "2.0", "id": ident, "result": {
                    "content": [{"type": "text", "text": "a logged-in caller"}]}})
            else:
                self.json({"jsonrpc": "2.0", "id": ident,
                           "error": {"code": -32601, "message": "no"}})
        else:
            self.send(404, b"", "text/plain")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
