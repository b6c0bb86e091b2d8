"""caked's agent verbs as MCP tools over stdio (a Model Context Protocol server).

    .venv/bin/python clients/mcp/cake_mcp.py        # spoken to over stdin/stdout

It holds no authority of its own: every call goes to caked with the *agent* token
($CAKE_TOKEN_FILE, else STATE_DIR/tokens/agent; STATE_DIR is $CAKE_STATE_DIR, default
/var/lib/caked), so the daemon decides what is allowed. The daemon's address is $CAKE_ADDR
(default: the state directory's socket); a daemon on TCP with TLS takes $CAKE_TLS_CA (and, under
mutual TLS, $CAKE_TLS_CERT and $CAKE_TLS_KEY), as cakectl does. Tools: status, inspect, propose (a
schedule or a portfolio), analyze, compile, validate, measure. Their input schemas are derived
from the request messages in proto/cake/service.proto. A call whose arguments do not match its schema is a JSON-RPC error
(INVALID_PARAMS) naming the field path; a call the daemon refuses is a tool result with
is_error and the daemon's status code and message (PERMISSION_DENIED, RESOURCE_EXHAUSTED with the
limit, ...), so the agent can correct it.
"""
from __future__ import annotations

import json
import os
import sys
import time

import anyio
import jsonschema
import mcp_types as types
from google.protobuf import descriptor as pbd
from google.protobuf import json_format
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from cake import CakeError, Client, evidence_pb2, service_pb2

_SCALARS = {
    pbd.FieldDescriptor.TYPE_STRING: {"type": "string"},
    pbd.FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    pbd.FieldDescriptor.TYPE_DOUBLE: {"type": "number"},
    pbd.FieldDescriptor.TYPE_FLOAT: {"type": "number"},
}
_INTS = {pbd.FieldDescriptor.TYPE_INT32, pbd.FieldDescriptor.TYPE_INT64,
         pbd.FieldDescriptor.TYPE_UINT32, pbd.FieldDescriptor.TYPE_UINT64,
         pbd.FieldDescriptor.TYPE_SINT32, pbd.FieldDescriptor.TYPE_SINT64}


def message_schema(desc: pbd.Descriptor, depth: int = 0) -> dict:
    """The JSON schema of a message as json_format reads it (proto field names)."""
    props = {}
    for f in desc.fields:
        if f.type == pbd.FieldDescriptor.TYPE_MESSAGE:
            s = message_schema(f.message_type, depth + 1) if depth < 4 else {"type": "object"}
        elif f.type == pbd.FieldDescriptor.TYPE_ENUM:
            s = {"type": "string", "enum": [v.name for v in f.enum_type.values]}
        elif f.type in _INTS:
            s = {"type": "integer"}
        else:
            s = dict(_SCALARS.get(f.type, {"type": "string"}))
        props[f.name] = {"type": "array", "items": s} if f.label == f.LABEL_REPEATED else s
    return {"type": "object", "properties": props, "additionalProperties": False}


def _with(schema: dict, required=(), **extra) -> dict:
    s = json.loads(json.dumps(schema))
    s["properties"].update(extra)
    if required:
        s["required"] = list(required)
    return s


_WAIT = {"type": "number", "minimum": 0, "maximum": 600,
         "description": "seconds to wait for the stage (default 120)"}
_CANDIDATE = message_schema(service_pb2.GetCandidateRequest.DESCRIPTOR)

TOOLS = {
    "status": ("Devices, queue, contracts and their incumbents, recent failures.",
               message_schema(service_pb2.StatusRequest.DESCRIPTOR)),
    "inspect": ("A candidate or a contract (its incumbent): a compact summary with bottlenecks, "
                "branches and recent failures; `sections` add detail within max_bytes.",
                {**message_schema(service_pb2.InspectRequest.DESCRIPTOR),
                 "oneOf": [{"required": ["candidate_id"]}, {"required": ["contract_id"]}]}),
    "propose": ("Propose a schedule (cake.ir.Module text) for a contract, with its hypothesis: "
                "parent, changed_decisions, expected_effect, falsification. Or, instead of "
                "schedule_text, a portfolio: members in dispatch order, each with its "
                "schedule_text and a shape guard, and a fallback for every other shape.",
                {**_with(message_schema(service_pb2.ProposeRequest.DESCRIPTOR),
                         required=("contract_id",)),
                 "oneOf": [{"required": ["schedule_text"]}, {"required": ["portfolio"]}]}),
    "analyze": ("The analysis report of a candidate (verdict, diagnostics with repairs).",
                _with(_CANDIDATE, required=("candidate_id",), wait_s=_WAIT)),
    "compile": ("The lowering receipt of a candidate (SASS census, registers, spills).",
                _with(_CANDIDATE, required=("candidate_id",), wait_s=_WAIT)),
    "validate": ("The validation evidence of a candidate (each record, eligibility).",
                 _with(_CANDIDATE, required=("candidate_id",), wait_s=_WAIT)),
    "measure": ("Measure an eligible candidate against the incumbent (paired runs on the GPU).",
                _with(message_schema(service_pb2.MeasureRequest.DESCRIPTOR),
                      required=("candidate_id",))),
}

_SETTLED = {evidence_pb2.REJECTED, evidence_pb2.MEASURED, evidence_pb2.CHALLENGER,
            evidence_pb2.CONFIRMED_WINNER}
_STAGE = {"analyze": evidence_pb2.ANALYZED, "compile": evidence_pb2.COMPILED,
          "validate": evidence_pb2.VALIDATED}


def _json(msg) -> dict:
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def _summary(c: evidence_pb2.Candidate) -> dict:
    return {
        "id": c.id, "contract_id": c.contract_id,
        "state": evidence_pb2.CandidateState.Name(c.state),
        "rejected_at": evidence_pb2.CandidateState.Name(c.rejected_at)
        if c.state == evidence_pb2.REJECTED else "",
        "note": c.status_note,
        "eligibility": c.eligibility.summary,
        "diagnostics": [{"id": _json(d).get("id"), "message": d.message, "repair": list(d.repair)}
                        for d in c.diagnostics][:10],
        "measurements": [{"run": m.run, "verdict": evidence_pb2.TimingVerdict.Name(m.verdict),
                          "ratio": round(m.weighted_geomean_ratio, 4)} for m in c.measurements],
    }


class Tools:
    def __init__(self, client: Client):
        self.client = client

    def _wait_stage(self, candidate_id: str, verb: str, wait_s: float) -> evidence_pb2.Candidate:
        end = time.monotonic() + wait_s
        while True:
            c = self.client.candidate(candidate_id)
            reached = c.state >= _STAGE[verb] and c.state != evidence_pb2.REJECTED
            # Validation is done when the candidate is eligible (every record, sanitizers
            # included) or rejected; passed numerical records alone are not the end of it.
            stopped = c.state in _SETTLED
            no_device = c.state == evidence_pb2.COMPILED and "no execution device" in c.status_note
            if reached or stopped or no_device or time.monotonic() > end:
                return c
            time.sleep(0.25)

    def call(self, name: str, args: dict) -> dict:
        if name == "status":
            return _json(self.client.status())
        if name == "inspect":
            req = json_format.ParseDict(args, service_pb2.InspectRequest())
            return _json(self.client._call("Inspect", req))
        if name == "propose":
            req = json_format.ParseDict(args, service_pb2.ProposeRequest())
            return _json(self.client._call("Propose", req))
        if name == "measure":
            return {"job_id": self.client.measure(args["candidate_id"],
                                                  args.get("idempotency_key", ""))}
        c = self._wait_stage(args["candidate_id"], name, float(args.get("wait_s", 120)))
        out = _summary(c)
        if name == "analyze":
            out["analysis"] = _json(c.analysis)
        elif name == "compile":
            out["receipt"] = _json(c.receipt)
        else:
            out["evidence"] = [_json(r) for r in c.evidence]
            out["eligibility"] = _json(c.eligibility)
        return out


def _field_path(error: jsonschema.ValidationError) -> str:
    return "arguments" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                                 for p in error.absolute_path)


def build_server(tools: Tools) -> Server:
    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=n, description=d, input_schema=s) for n, (d, s) in TOOLS.items()])

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in TOOLS:
            raise MCPError(types.INVALID_PARAMS,
                           f"no tool '{params.name}'; the tools are {', '.join(TOOLS)}")
        args = params.arguments or {}
        try:
            jsonschema.validate(args, TOOLS[params.name][1])
        except jsonschema.ValidationError as e:
            raise MCPError(types.INVALID_PARAMS, f"{_field_path(e)}: {e.message}",
                           {"field": _field_path(e)}) from None
        try:
            result = await anyio.to_thread.run_sync(tools.call, params.name, args)
        except CakeError as e:
            error = {"code": e.code.name, "message": e.message}
            if e.detail is not None:
                error["detail"] = _json(e.detail)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"{e.code.name}: {e.message}")],
                structured_content={"error": error}, is_error=True)
        except json_format.ParseError as e:
            raise MCPError(types.INVALID_PARAMS, f"arguments: {e}") from None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, indent=1))],
            structured_content=result)

    return Server("cake", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> int:
    state = os.environ.get("CAKE_STATE_DIR") or "/var/lib/caked"
    token = os.environ.get("CAKE_TOKEN_FILE") or os.path.join(state, "tokens", "agent")
    try:
        client = Client(token_file=token)
    except CakeError as e:
        print(f"cake_mcp: {e}", file=sys.stderr)
        return 4
    server = build_server(Tools(client))

    async def run():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
