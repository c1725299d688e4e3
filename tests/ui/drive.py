"""Drives headless Chromium over the DevTools protocol for tests/it/ui.rs.

Usage: drive.py CHROMIUM URL STEP_JSON...

Opens URL, then runs each step: evaluates its `until` (JavaScript) until it is truthy (or 20 s
pass), saves a `screenshot` if asked, evaluates its `then`, prints one JSON line
{"step", "value", "seconds"} (the last value of `until`, and how long it took), and with
`wait_for_file` waits until that file exists (the test acting between steps). At the end it
prints {"step": "console", "value": [...]}: every exception, console message and browser log
entry (a CSP violation is one) the page produced.

Before the page loads, a dialog (alert, confirm, prompt) is made to mark
`document.documentElement.dataset.pwned` instead of opening: a dialog would block the browser.
"""
import asyncio, base64, json, os, socket, subprocess, sys, tempfile, time, urllib.request

import websockets

STUB = ("window.alert = window.confirm = window.prompt = () => "
        "{ document.documentElement.dataset.pwned = 'dialog'; };")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def main(chromium, url, steps):
    port = free_port()
    profile = tempfile.mkdtemp()
    browser = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--window-size=1400,900", f"--remote-debugging-port={port}",
         f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    console = []
    try:
        deadline = time.time() + 30
        while True:
            try:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
                page = next(t for t in targets if t["type"] == "page")
                break
            except Exception:
                if time.time() > deadline:
                    raise
                await asyncio.sleep(0.2)
        async with websockets.connect(page["webSocketDebuggerUrl"], max_size=None) as ws:
            ids = iter(range(1, 1_000_000))

            def note(message):
                method, params = message.get("method"), message.get("params", {})
                if method == "Runtime.exceptionThrown":
                    console.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
                elif method == "Runtime.consoleAPICalled":
                    console.append(f"console.{params.get('type')}: " + json.dumps(params.get("args", []))[:500])
                elif method == "Log.entryAdded":
                    entry = params.get("entry", {})
                    console.append(f"log {entry.get('level')}: {entry.get('text', '')[:500]}")

            async def call(method, **params):
                n = next(ids)
                await ws.send(json.dumps({"id": n, "method": method, "params": params}))
                while True:
                    message = json.loads(await ws.recv())
                    if message.get("id") == n:
                        return message.get("result", {})
                    note(message)

            await call("Runtime.enable")
            await call("Log.enable")
            await call("Page.enable")
            await call("Page.addScriptToEvaluateOnNewDocument", source=STUB)
            await call("Page.navigate", url=url)
            for step in steps:
                started = time.time()
                value = None
                while time.time() - started < 20:
                    result = await call("Runtime.evaluate", expression=step["until"], returnByValue=True)
                    value = result.get("result", {}).get("value")
                    if value:
                        break
                    await asyncio.sleep(0.05)
                seconds = round(time.time() - started, 3)
                if step.get("screenshot"):
                    shot = await call("Page.captureScreenshot", format="png")
                    with open(step["screenshot"], "wb") as f:
                        f.write(base64.b64decode(shot["data"]))
                if step.get("then"):
                    await call("Runtime.evaluate", expression=step["then"], returnByValue=True)
                print(json.dumps({"step": step["name"], "value": value, "seconds": seconds}), flush=True)
                if step.get("wait_for_file"):
                    while not os.path.exists(step["wait_for_file"]):
                        await asyncio.sleep(0.05)
            # What arrived since the last call.
            await call("Runtime.evaluate", expression="1")
        print(json.dumps({"step": "console", "value": console}), flush=True)
    finally:
        browser.kill()
        browser.wait()


asyncio.run(main(sys.argv[1], sys.argv[2], [json.loads(s) for s in sys.argv[3:]]))
