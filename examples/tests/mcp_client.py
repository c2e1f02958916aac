"""The examples' MCP server as the official MCP Python SDK sees it.

Run by the Rust test `mcp::official_python_sdk_client` (examples/tests/mcp.rs):

    python3 mcp_client.py SERVER_BINARY EXPECTED_JSON

It starts SERVER_BINARY over stdio (with --init-world), lists the tools and compares each one,
as the SDK parsed it, with EXPECTED_JSON ({"tools": {name: {"description", "annotations"}},
"allowed": {...}, "denied": {...}}), then makes the allowed call and the denied call.
Exit status: 0 when everything matches, 1 with the differences on stderr, 3 when the SDK is not
installed (the Rust test decides whether that is a skip).
"""

import asyncio
import json
import sys

try:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as e:  # the caller decides whether a missing SDK is a failure
    print(f"the MCP Python SDK is not installed ({e}); install it with: pip install mcp", file=sys.stderr)
    sys.exit(3)


def wire(model):
    """A model of the SDK as the JSON it stands for (field names as on the wire)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def text_of(result):
    return "".join(block.get("text", "") for block in result.get("content", []))


async def run(server, expected):
    problems = []
    params = StdioServerParameters(command=server, args=["--init-world"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            listed = wire(await session.list_tools())
            tools = {tool["name"]: tool for tool in listed["tools"]}
            if sorted(tools) != sorted(expected["tools"]):
                problems.append(f"tools: {sorted(tools)} != {sorted(expected['tools'])}")
            for name, want in expected["tools"].items():
                tool = tools.get(name, {})
                if not tool.get("description"):
                    problems.append(f"{name}: no description")
                elif tool["description"] != want["description"]:
                    problems.append(f"{name}: description {tool['description']!r} != {want['description']!r}")
                if not tool.get("title"):
                    problems.append(f"{name}: no title")
                annotations = tool.get("annotations", {})
                if annotations != want["annotations"]:
                    problems.append(f"{name}: annotations {annotations} != {want['annotations']}")
                if annotations.get("readOnlyHint") and (
                    "idempotentHint" in annotations or "destructiveHint" in annotations
                ):
                    problems.append(f"{name}: a hint the specification ignores for a read-only tool")

            allowed = expected["allowed"]
            result = wire(await session.call_tool(allowed["tool"], allowed["arguments"]))
            if result.get("isError"):
                problems.append(f"allowed call failed: {result}")
            elif text_of(result) != allowed["text"]:
                problems.append(f"allowed call answered {text_of(result)!r}, not {allowed['text']!r}")

            denied = expected["denied"]
            result = wire(await session.call_tool(denied["tool"], denied["arguments"]))
            denial = result.get("_meta", {}).get("toolpolicy/denial", {})
            if not result.get("isError"):
                problems.append(f"denied call was not a tool error: {result}")
            if denial.get("code") != denied["code"]:
                problems.append(f"denied call: code {denial.get('code')!r} != {denied['code']!r}: {result}")
            if not text_of(result).startswith("Denied:"):
                problems.append(f"denied call: text {text_of(result)!r}")

    print(json.dumps({"tools": sorted(tools), "problems": problems}))
    return problems


def main():
    server, expected_path = sys.argv[1], sys.argv[2]
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    problems = asyncio.run(run(server, expected))
    for problem in problems:
        print(problem, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
