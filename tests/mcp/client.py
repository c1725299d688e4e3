"""An MCP client for tests/it/mcp.rs, built on the official Python MCP SDK (`pip install mcp`,
installed by scripts/test.sh): starts `ACPTAP mcp --db DB` over stdio, initializes, lists the tools and
resources, then runs each call of CALLS (a JSON list of {"tool": NAME, "arguments": {...}} or
{"resource": URI}) and prints one JSON object: {"server", "tools", "resources", "results"}, each
result {"is_error", "text"} (a tool) or {"error"} (a protocol error) or {"text", "mime"} (a
resource).

Usage: client.py ACPTAP DB CALLS_JSON   (or @FILE holding the JSON)
"""
import asyncio, json, sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


async def main(exe, db, calls):
    server = StdioServerParameters(command=exe, args=["mcp", "--db", db])
    async with stdio_client(server) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            resources = await session.list_resources()
            results = []
            for call in calls:
                try:
                    if "tool" in call:
                        r = await session.call_tool(call["tool"], call.get("arguments", {}))
                        text = "".join(c.text for c in r.content if getattr(c, "type", "") == "text")
                        results.append({"is_error": bool(r.is_error), "text": text})
                    else:
                        r = await session.read_resource(call["resource"])
                        c = r.contents[0]
                        results.append({"text": c.text, "mime": c.mime_type})
                except MCPError as e:
                    results.append({"error": {"code": e.error.code, "message": e.error.message}})
            print(json.dumps({
                "server": {"name": init.server_info.name, "instructions": init.instructions},
                "tools": [{"name": t.name, "description": t.description, "schema": t.input_schema}
                          for t in tools.tools],
                "resources": [{"uri": str(r.uri), "mime": r.mime_type} for r in resources.resources],
                "results": results,
            }))


calls = sys.argv[3]
if calls.startswith("@"):
    calls = open(calls[1:]).read()
asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(calls)))
