#!/usr/bin/env python3
"""Checks an acptap recording against the testbed's two byte captures of the same session.

    real_peers_verify.py CAPTURE_DIR DB

CAPTURE_DIR holds client_side.jsonl (what the client saw) and agent_side.jsonl (what the agent
saw), written by the testbed's tee shims around `acptap run --db DB`. Independently of acptap's
code, it checks that the database holds every line exactly, the sessions, the turns with their
stop reasons, every tool call's final status and every permission decision (who decided, the
outcome and the option). Prints `ok` or one line per difference; exit 0 iff none.
"""
import json
import sqlite3
import sys


def capture(path):
    lines = []
    for rec in open(path, encoding="utf-8"):
        rec = json.loads(rec)
        if rec.get("dir") in ("c2a", "a2c") and "text" in rec:
            lines.append((rec["dir"], rec["text"]))
    return lines


def parsed(text):
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def main():
    out, db = sys.argv[1], sys.argv[2]
    client_side = capture(f"{out}/client_side.jsonl")
    agent_side = capture(f"{out}/agent_side.jsonl")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    problems = []

    # The session's own connection: the first (a replay as client adds its live runs after it).
    conns = con.execute("SELECT id, complete FROM connections ORDER BY id").fetchall()
    if not conns:
        print("no connection recorded")
        return 1
    conn, complete = conns[0]
    notes = []
    if complete != 1:
        # acpx and the Rust SDK end their agent with SIGTERM and, 1.5 s or 3 s later, SIGKILL to
        # the whole process group, acptap included: an agent slower to exit outlives acptap, and
        # the connection is not marked complete, but no line may be missing. The client-side
        # shim, in that group too, then wrote no exit record.
        killed = not any(
            json.loads(r).get("event") == "exit" for r in open(f"{out}/client_side.jsonl", encoding="utf-8")
        )
        if killed:
            notes.append("killed by the client before it could mark the connection complete")
        else:
            problems.append("the connection is not marked complete")

    # 1. Every line, byte for byte: the client's lines as the client wrote them, the agent's as the
    # agent wrote them, and acptap's own (policy answers) as the agent received them.
    def recorded(direction, origin):
        rows = con.execute(
            "SELECT raw FROM messages WHERE connection_id = ? AND direction = ? AND origin = ? ORDER BY seq",
            (conn, direction, origin),
        )
        return [bytes(r[0]).decode("utf-8", "replace").rstrip("\n").rstrip("\r") for r in rows]

    want_c2a = [t for d, t in client_side if d == "c2a"]
    want_a2c = [t for d, t in agent_side if d == "a2c"]
    client_lines = set(want_c2a)
    want_own = [t for d, t in agent_side if d == "c2a" and t not in client_lines]
    for name, want, got in (
        ("client's lines", want_c2a, recorded("c2a", "peer")),
        ("agent's lines", want_a2c, recorded("a2c", "peer")),
        ("acptap's own lines", want_own, recorded("c2a", "acptap")),
    ):
        if want != got:
            first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
            problems.append(f"{name}: {len(got)} recorded, {len(want)} captured, first difference at {first}")

    # 2. Sessions, 3. turns, 4. tool calls, 5. permission decisions, from the agent side's capture
    # (what the agent sent and received), the client side telling who answered.
    # The tee shims log each direction as they pass it on, so a fast answer may be logged before
    # its request: requests first, then each answer matched to its request by id, in order.
    messages = [(d, t, parsed(t)) for d, t in agent_side]
    messages = [(d, t, m) for d, t, m in messages if m is not None]
    pending = {}  # (direction of the request, id) -> [request, ...] not yet answered
    answered = []  # (request, answer)
    for direction, text, msg in messages:
        if "method" in msg and "id" in msg:
            pending.setdefault((direction, json.dumps(msg["id"])), []).append((text, msg))
    for direction, text, msg in messages:
        if "method" not in msg and "id" in msg:
            waiting = pending.get(("a2c" if direction == "c2a" else "c2a", json.dumps(msg["id"])))
            if waiting:
                answered.append((waiting.pop(0), msg))
    answer_of = {id(req[1]): ans for req, ans in answered}

    sessions, turns, statuses, permissions = [], [], {}, []
    for direction, text, msg in messages:
        method = msg.get("method")
        if method and "id" in msg:
            answer = answer_of.get(id(msg))
            result = (answer or {}).get("result") if isinstance((answer or {}).get("result"), dict) else {}
            if method == "session/new" and "sessionId" in result:
                sessions.append(result["sessionId"])
            if method == "session/prompt" and answer is not None:
                turns.append(result.get("stopReason") if "result" in answer else None)
            if method == "session/request_permission":
                permissions.append({"id": json.dumps(msg["id"]), "text": text, "answer": answer})
        update = None
        if method == "session/update":
            update = (msg.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") not in ("tool_call", "tool_call_update"):
                update = None
        elif method == "session/request_permission":
            # ACP: the request's toolCall is an update of the call like any other
            update = (msg.get("params") or {}).get("toolCall")
        if isinstance(update, dict) and update.get("toolCallId") is not None:
            call = update["toolCallId"]
            if update.get("status") is not None or call not in statuses:
                statuses[call] = update.get("status") or statuses.get(call) or "pending"

    got_sessions = [r[0] for r in con.execute("SELECT session_id FROM sessions WHERE connection_id = ? AND origin = 'new' ORDER BY id", (conn,))]
    if sorted(got_sessions) != sorted(sessions):
        problems.append(f"sessions: recorded {got_sessions}, captured {sessions}")
    got_turns = [r[0] for r in con.execute("SELECT stop_reason FROM prompt_turns WHERE connection_id = ? ORDER BY request_seq", (conn,))]
    if got_turns != turns:
        problems.append(f"turns' stop reasons: recorded {got_turns}, captured {turns}")
    got_calls = dict(con.execute("SELECT tool_call_id, status FROM tool_calls WHERE connection_id = ?", (conn,)))
    for call, status in statuses.items():
        if got_calls.get(call) != status:
            problems.append(f"tool call {call}: recorded status {got_calls.get(call)}, captured {status}")
    shown_to_client = {t for d, t in client_side if d == "a2c"}
    got_perms = con.execute(
        "SELECT outcome, option_id, decided_by FROM permission_requests WHERE connection_id = ? ORDER BY request_seq",
        (conn,),
    ).fetchall()
    if len(got_perms) != len(permissions):
        problems.append(f"permission requests: {len(got_perms)} recorded, {len(permissions)} captured")
    for (outcome, option, decided_by), p in zip(got_perms, permissions):
        answer = p["answer"]
        if answer is None:
            want = (None, None, None)
        elif "error" in answer:
            want = ("error", None, "client")
        else:
            o = (answer.get("result") or {}).get("outcome") or {}
            want = (o.get("outcome"), o.get("optionId"), "cancelled" if o.get("outcome") == "cancelled" else "client")
        if p["text"] not in shown_to_client and answer is not None:
            want = (want[0], want[1], "policy")
        if (outcome, option, decided_by) != want:
            problems.append(f"permission {p['id']}: recorded {(outcome, option, decided_by)}, captured {want}")

    for p in problems:
        print(p)
    if not problems:
        print(f"ok ({len(sessions)} session(s), {len(turns)} turn(s), {len(statuses)} tool call(s), {len(permissions)} permission(s))" + "".join(f"; {n}" for n in notes))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
