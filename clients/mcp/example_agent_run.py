"""A worked agent run through the MCP adapter, printed as a transcript (docs/agents.md):
status -> inspect the contract -> propose an illegal schedule -> read its diagnostics -> repair
as they say -> propose again -> analyze -> compile -> validate (-> measure, on a GPU machine).

    CAKE_STATE_DIR=... .venv/bin/python clients/mcp/example_agent_run.py CONTRACT_ID BASELINE_ID
"""
import json
import os
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cake import Schedule

ADAPTER = os.path.join(os.path.dirname(__file__), "cake_mcp.py")


def show(verb, args, result, keep=None):
    print(f"\n>>> {verb} {json.dumps(args)[:300]}")
    if result.is_error:
        print("error:", result.content[0].text)
        return None
    out = result.structured_content
    if verb == "inspect" and "contract" in out:
        return out
    shown = {k: out[k] for k in keep if k in out} if keep else out
    print(json.dumps(shown, indent=1)[:2500])
    return out


async def agent_run(contract, baseline):
    params = StdioServerParameters(command=sys.executable, args=[ADAPTER], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            print("tools:", ", ".join(t.name for t in (await s.list_tools()).tools))
            show("status", {}, await s.call_tool("status", {}),
                 keep=["execution_device", "device_note", "devices", "contracts"])
            c = show("inspect", {"contract_id": contract},
                     await s.call_tool("inspect", {"contract_id": contract}))["contract"]
            print("rows:", [(r["name"], r["problem"]) for r in c["rows"]])
            big = Schedule.gemm().with_tile(256, 256, 64).pipeline(stages=4)
            args = {"contract_id": contract, "schedule_text": "<256x256x64, 4 stages>",
                    "hypothesis": {"parent": baseline, "changed_decisions": ["tile", "stages"],
                                   "expected_effect": "optimise memory",
                                   "falsification": "it is not faster"}}
            show("propose", args, await s.call_tool("propose", dict(args, schedule_text=big.text())))
            args["hypothesis"].update(
                expected_effect="a 256x256 tile halves global loads per flop on the 8k rows",
                falsification="the paired run is not FASTER beyond the floor on the 8k rows")
            r = show("propose", args,
                     await s.call_tool("propose", dict(args, schedule_text=big.text())))
            a = show("analyze", {"candidate_id": r["candidate_id"]},
                     await s.call_tool("analyze", {"candidate_id": r["candidate_id"], "wait_s": 300}),
                     keep=["id", "state", "rejected_at", "note", "diagnostics"])
            fixed = Schedule.gemm().with_tile(128, 256, 32).with_warps(2, 4).pipeline(stages=3)
            args = {"contract_id": contract, "schedule_text": "<128x256x32, 2x4 warps, 3 stages>",
                    "hypothesis": {"parent": baseline,
                                   "changed_decisions": ["tile", "warps"],
                                   "expected_effect": "a 128x256 tile over 8 warps cuts B loads "
                                                      "per flop by half on the 8k rows",
                                   "falsification": "the paired run is not FASTER on square_4k"}}
            r = show("propose", args, await s.call_tool("propose",
                                                        dict(args, schedule_text=fixed.text())))
            cid = r["candidate_id"]
            show("analyze", {"candidate_id": cid},
                 await s.call_tool("analyze", {"candidate_id": cid, "wait_s": 300}),
                 keep=["id", "state", "diagnostics"])
            comp = show("compile", {"candidate_id": cid},
                        await s.call_tool("compile", {"candidate_id": cid, "wait_s": 300}),
                        keep=["id", "state", "note"])
            rec = comp and (await s.call_tool("compile", {"candidate_id": cid})).structured_content
            if rec:
                receipt = rec["receipt"]
                census = sorted(receipt.get("sass_census", []), key=lambda e: -int(e["count"]))
                print("receipt:", json.dumps({
                    "outcome": receipt.get("outcome"), "target": receipt.get("target"),
                    "resources": receipt.get("resources"),
                    "sass_census (top 6)": {e["opcode"]: int(e["count"]) for e in census[:6]}},
                    indent=1)[:1500])
            show("validate", {"candidate_id": cid},
                 await s.call_tool("validate", {"candidate_id": cid, "wait_s": 600}),
                 keep=["id", "state", "note", "eligibility"])
            show("measure", {"candidate_id": cid},
                 await s.call_tool("measure", {"candidate_id": cid}))


if __name__ == "__main__":
    anyio.run(agent_run, sys.argv[1], sys.argv[2])
