"""Drives `profq mcp` with the official Python MCP client (`pip install mcp`), as an agent would.

    python mcp_client.py PROFQ < plan.json

plan.json: {"servers": [{"args": [...], "calls": [[tool, {arguments}], ...]}, ...]}: each
server is started as `PROFQ mcp ARGS...` over stdio, listed, and given its calls in order.
Prints, as JSON, per server: the tools listed (name and input schema) and per call whether
it was an error and its text.
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def field(obj, name, old_name):
    """A result's field under the client's name for it (mcp 2 snake_case, mcp 1 camelCase)."""
    return getattr(obj, name) if hasattr(obj, name) else getattr(obj, old_name)


async def drive(profq, server):
    params = StdioServerParameters(command=profq, args=["mcp", *server["args"]], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            listed = await session.list_tools()
            results = []
            for name, arguments in server["calls"]:
                result = await session.call_tool(name, arguments)
                text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                results.append({"tool": name, "is_error": bool(field(result, "is_error", "isError")), "text": text})
            return {
                "server": field(info, "server_info", "serverInfo").name,
                "tools": [{"name": t.name, "schema": field(t, "input_schema", "inputSchema")} for t in listed.tools],
                "results": results,
            }


async def main(profq):
    plan = json.load(sys.stdin)
    out = [await drive(profq, server) for server in plan["servers"]]
    json.dump(out, sys.stdout)


asyncio.run(main(sys.argv[1]))
