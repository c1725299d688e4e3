"""A small ACP agent for tests/it/replay.rs: on each prompt it asks the client for files with
fs/read_text_file (in its session's cwd: notes.txt lines 2-3, missing.txt; and /etc/hostname,
outside it) and writes to new.txt and link.txt (a symlink the test may plant), reads
../secret.txt, then tells what it got as agent text, and ends the turn.
$FS_AGENT_REQUESTS, when set, replaces those requests: a JSON list of [method, path relative to
the cwd, more params].
Every answer it receives is also appended, as a JSON line, to $FS_AGENT_LOG."""
import json, os, sys

log = os.environ.get("FS_AGENT_LOG")
cwd = None
next_id = 100


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask(method, params):
    global next_id
    next_id += 1
    send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == next_id and "method" not in message:
            if log:
                with open(log, "a") as f:
                    f.write(json.dumps({"request": params, "answer": message}) + "\n")
            return message
    sys.exit(0)


for line in sys.stdin:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentInfo": {"name": "fs-agent", "version": "1"}}})
    elif method == "session/new":
        cwd = message["params"]["cwd"]
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "fs-session"}})
    elif method == "session/prompt" and os.environ.get("FS_AGENT_REQUESTS"):
        answers = [
            ask(m, {"sessionId": "fs-session", "path": os.path.join(cwd, path), **more})
            for m, path, more in json.loads(os.environ["FS_AGENT_REQUESTS"])
        ]
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif method == "session/prompt":
        answers = [
            ask("fs/read_text_file", {"sessionId": "fs-session", "path": os.path.join(cwd, "notes.txt"), "line": 2, "limit": 2}),
            ask("fs/read_text_file", {"sessionId": "fs-session", "path": os.path.join(cwd, "missing.txt")}),
            ask("fs/read_text_file", {"sessionId": "fs-session", "path": "/etc/hostname"}),
            ask("fs/write_text_file", {"sessionId": "fs-session", "path": os.path.join(cwd, "new.txt"), "content": "written"}),
            ask("fs/write_text_file", {"sessionId": "fs-session", "path": os.path.join(cwd, "link.txt"), "content": "through a link"}),
            ask("fs/read_text_file", {"sessionId": "fs-session", "path": cwd + "/../secret.txt"}),
        ]
        text = " | ".join(json.dumps(a.get("result", a.get("error"))) for a in answers)
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "fs-session", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
