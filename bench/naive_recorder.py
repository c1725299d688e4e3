#!/usr/bin/env python3
"""Naive recording proxy in Python: the line a recording proxy must clear by far.
A line-oriented relay both ways (each line forwarded and flushed as soon as it is read),
and every line is recorded into SQLite (WAL, batched transactions, method/id extracted
with json.loads) by a separate writer thread.
usage: naive_recorder.py --db FILE -- CMD [ARGS...]"""
import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time


def main():
    a = sys.argv[1:]
    if len(a) < 4 or a[0] != "--db" or a[2] != "--":
        sys.exit(__doc__)
    db, cmd = a[1], a[3:]
    q = queue.SimpleQueue()
    con = sqlite3.connect(db, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute(
        "CREATE TABLE IF NOT EXISTS messages(id INTEGER PRIMARY KEY, dir TEXT, ts REAL,"
        " method TEXT, rpc_id TEXT, raw BLOB)"
    )
    con.commit()

    def writer():
        open_pumps = 2
        while open_pumps:
            items = [q.get()]
            try:
                while len(items) < 2000:
                    items.append(q.get_nowait())
            except queue.Empty:
                pass
            rows = []
            for it in items:
                if it is None:
                    open_pumps -= 1
                    continue
                d, ts, line = it
                method = rid = None
                try:
                    m = json.loads(line)
                    method = m.get("method")
                    rid = json.dumps(m["id"]) if "id" in m else None
                except Exception:
                    pass
                rows.append((d, ts, method, rid, line))
            if rows:
                con.executemany("INSERT INTO messages(dir,ts,method,rpc_id,raw) VALUES(?,?,?,?,?)", rows)
                con.commit()

    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def pump(src, dst, direction, close_dst):
        try:
            for line in iter(src.readline, b""):
                dst.write(line)
                dst.flush()
                q.put((direction, time.time(), line))
        except (BrokenPipeError, OSError):
            pass
        finally:
            if close_dst:
                try:
                    dst.close()
                except OSError:
                    pass
            q.put(None)

    w = threading.Thread(target=writer)
    w.start()
    up = threading.Thread(target=pump, args=(sys.stdin.buffer, p.stdin, "c2a", True), daemon=True)
    down = threading.Thread(target=pump, args=(p.stdout, sys.stdout.buffer, "a2c", False))
    up.start()
    down.start()
    down.join()
    # acptap's copy ends its stdout when the agent's ends, as a proxy does, so a client that
    # reads to the end is not left waiting (the only change from shared/reference).
    os.close(sys.stdout.fileno())
    rc = p.wait()
    up.join(timeout=5)
    w.join()
    con.close()
    sys.exit(rc)


if __name__ == "__main__":
    main()
