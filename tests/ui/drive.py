"""Drives headless Chromium over the DevTools protocol for tests/it/ui.rs: opens URL, then runs
each step, a JavaScript expression, until it is truthy (or 20 s pass), and prints one JSON line
per step with its last value. Usage: drive.py CHROMIUM URL STEP_JSON..."""
import asyncio, json, os, socket, subprocess, sys, tempfile, time, urllib.request

import websockets


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def main(chromium, url, steps):
    port = free_port()
    profile = tempfile.mkdtemp()
    browser = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1400,900",
         f"--remote-debugging-port={port}", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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

            async def call(method, **params):
                n = next(ids)
                await ws.send(json.dumps({"id": n, "method": method, "params": params}))
                while True:
                    message = json.loads(await ws.recv())
                    if message.get("id") == n:
                        return message.get("result", {})

            await call("Page.navigate", url=url)
            for step in steps:
                started = time.time()
                value = None
                while time.time() - started < 20:
                    result = await call("Runtime.evaluate", expression=step["until"], returnByValue=True)
                    value = result.get("result", {}).get("value")
                    if value:
                        break
                    await asyncio.sleep(0.1)
                if step.get("screenshot"):
                    import base64
                    shot = await call("Page.captureScreenshot", format="png")
                    with open(step["screenshot"], "wb") as f:
                        f.write(base64.b64decode(shot["data"]))
                if step.get("then"):
                    await call("Runtime.evaluate", expression=step["then"], returnByValue=True)
                print(json.dumps({"step": step["name"], "value": value,
                                  "seconds": round(time.time() - started, 3)}), flush=True)
                if step.get("wait_for_file"):
                    while not os.path.exists(step["wait_for_file"]):
                        await asyncio.sleep(0.05)
    finally:
        browser.kill()
        browser.wait()


asyncio.run(main(sys.argv[1], sys.argv[2], [json.loads(s) for s in sys.argv[3:]]))
