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


_INT64 = {pbd.FieldDescriptor.TYPE_INT64, pbd.FieldDescriptor.TYPE_UINT64,
          pbd.FieldDescriptor.TYPE_SINT64, pbd.FieldDescriptor.TYPE_FIXED64,
          pbd.FieldDescriptor.TYPE_SFIXED64}
_INTS |= _INT64 | {pbd.FieldDescriptor.TYPE_FIXED32, pbd.FieldDescriptor.TYPE_SFIXED32}
# Every integer is a JSON integer when it is exact in a double (|v| <= 2^53), else a decimal
# string, in inputs and outputs of every tool alike.
_EXACT = 1 << 53
_INTEGER = {"type": ["integer", "string"], "pattern": "^-?[0-9]+$",
            "description": "an integer; a decimal string when beyond 2^53"}


def _is_map(f: pbd.FieldDescriptor) -> bool:
    return f.type == pbd.FieldDescriptor.TYPE_MESSAGE and f.message_type.GetOptions().map_entry


def _value_schema(f: pbd.FieldDescriptor, depth: int, closed: bool) -> dict:
    if f.type == pbd.FieldDescriptor.TYPE_MESSAGE:
        return message_schema(f.message_type, depth + 1, closed) if depth < 4 else {"type": "object"}
    if f.type == pbd.FieldDescriptor.TYPE_ENUM:
        return {"type": "string", "enum": [v.name for v in f.enum_type.values]}
    if f.type in _INTS:
        return dict(_INTEGER)
    return dict(_SCALARS.get(f.type, {"type": "string"}))


def message_schema(desc: pbd.Descriptor, depth: int = 0, closed: bool = True) -> dict:
    """The JSON schema of a message as json_format reads and _json writes it (proto field
    names). `closed`: no other property (inputs); outputs may grow fields."""
    props = {}
    for f in desc.fields:
        if _is_map(f):
            props[f.name] = {"type": "object", "additionalProperties": _value_schema(
                f.message_type.fields_by_name["value"], depth, closed)}
            continue
        s = _value_schema(f, depth, closed)
        props[f.name] = {"type": "array", "items": s} if f.label == f.LABEL_REPEATED else s
    return {"type": "object", "properties": props, "additionalProperties": not closed}


def _with(schema: dict, required=(), **extra) -> dict:
    s = json.loads(json.dumps(schema))
    s["properties"].update(extra)
    if required:
        s["required"] = list(required)
    return s


_WAIT = {"type": "number", "minimum": 0, "maximum": 600,
         "description": "seconds to wait for the stage (default 120)"}
_CANDIDATE = message_schema(service_pb2.GetCandidateRequest.DESCRIPTOR)

def _out(desc: pbd.Descriptor) -> dict:
    return message_schema(desc, closed=False)


# What analyze, compile and validate return: the candidate's summary and that stage's evidence.
_SUMMARY = {"type": "object", "properties": {
    "id": {"type": "string"}, "contract_id": {"type": "string"},
    "state": {"type": "string"}, "rejected_at": {"type": "string"}, "note": {"type": "string"},
    "eligibility": _out(evidence_pb2.Eligibility.DESCRIPTOR),
    "diagnostics": {"type": "array", "items": {"type": "object", "properties": {
        "id": {"type": ["string", "null"]}, "message": {"type": "string"},
        "repair": {"type": "array", "items": {"type": "string"}}}}},
    "measurements": {"type": "array", "items": {"type": "object", "properties": {
        "run": dict(_INTEGER), "verdict": {"type": "string"}, "ratio": {"type": "number"}}}},
}, "required": ["id", "state", "eligibility"]}


def _stage(extra: str, schema: dict) -> dict:
    out = json.loads(json.dumps(_SUMMARY))
    out["properties"][extra] = schema
    return out


_READ = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                              open_world_hint=False)
# Propose stores a candidate; the same schedule again returns the same record.
_PROPOSE = types.ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                 idempotent_hint=True, open_world_hint=False)
# Measure queues GPU runs; only a repeated idempotency_key returns the first job.
_MEASURE = types.ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                 idempotent_hint=False, open_world_hint=False)

# A search proposes and measures on its own until its budget ends; each start is a new search.
_SEARCH = types.ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                idempotent_hint=False, open_world_hint=False)

# name: (description, input schema, output schema, annotations). Input schemas are plain objects
# (no oneOf at the top, which several LLM tool APIs refuse); where one of two properties is
# needed the description says so and the call is refused naming them.
TOOLS = {
    "status": ("Devices, queue, contracts and their incumbents, recent failures.",
               message_schema(service_pb2.StatusRequest.DESCRIPTOR),
               _out(service_pb2.StatusReply.DESCRIPTOR), _READ),
    "inspect": ("A candidate or a contract (its incumbent): a compact summary with bottlenecks, "
                "branches and recent failures; `sections` add detail within max_bytes. Give "
                "exactly one of candidate_id and contract_id.",
                message_schema(service_pb2.InspectRequest.DESCRIPTOR),
                _out(service_pb2.InspectReply.DESCRIPTOR), _READ),
    "propose": ("Propose a schedule (cake.ir.Module text) for a contract, with its hypothesis: "
                "parent, changed_decisions, expected_effect, falsification. Or, instead of "
                "schedule_text, a portfolio: members in dispatch order, each with its "
                "schedule_text and a shape guard, and a fallback for every other shape. Give "
                "exactly one of schedule_text and portfolio.",
                _with(message_schema(service_pb2.ProposeRequest.DESCRIPTOR),
                      required=("contract_id",)),
                _out(service_pb2.ProposeReply.DESCRIPTOR), _PROPOSE),
    "analyze": ("The analysis report of a candidate (verdict, diagnostics with repairs).",
                _with(_CANDIDATE, required=("candidate_id",), wait_s=_WAIT),
                _stage("analysis", _out(evidence_pb2.Candidate.DESCRIPTOR.fields_by_name[
                    "analysis"].message_type)), _READ),
    "compile": ("The lowering receipt of a candidate (SASS census, registers, spills).",
                _with(_CANDIDATE, required=("candidate_id",), wait_s=_WAIT),
                _stage("receipt", _out(evidence_pb2.Candidate.DESCRIPTOR.fields_by_name[
                    "receipt"].message_type)), _READ),
    "validate": ("The validation evidence of a candidate (each record, eligibility).",
                 _with(_CANDIDATE, required=("candidate_id",), wait_s=_WAIT),
                 _stage("evidence", {"type": "array", "items": _out(
                     evidence_pb2.Candidate.DESCRIPTOR.fields_by_name["evidence"].message_type)}),
                 _READ),
    "measure": ("Measure an eligible candidate against the incumbent (paired runs on the GPU).",
                _with(message_schema(service_pb2.MeasureRequest.DESCRIPTOR),
                      required=("candidate_id",)),
                {"type": "object", "properties": {"job_id": dict(_INTEGER)},
                 "required": ["job_id"]}, _MEASURE),
    "search": ("Start the daemon's search on a contract: it proposes points of the workload's "
               "schedule space ranked by the cost model fitted to this device's measured rows, "
               "until budget_seconds (1..86400) or max_candidates ends it. Returns at once with "
               "the search id; follow it with search_status.",
               _with(message_schema(service_pb2.StartSearchRequest.DESCRIPTOR),
                     required=("contract_id", "budget_seconds")),
               _out(service_pb2.SearchReport.DESCRIPTOR), _SEARCH),
    "search_status": ("A search's report: rounds, each point's predicted and measured weighted "
                      "time, the cost model's calibration, the incumbent.",
                      _with(message_schema(service_pb2.GetSearchRequest.DESCRIPTOR),
                            required=("search_id",)),
                      _out(service_pb2.SearchReport.DESCRIPTOR), _READ),
}
# Exactly one of these properties, where a tool needs one.
_ONE_OF = {"inspect": ("candidate_id", "contract_id"), "propose": ("schedule_text", "portfolio")}

_SETTLED = {evidence_pb2.REJECTED, evidence_pb2.MEASURED, evidence_pb2.CHALLENGER,
            evidence_pb2.CONFIRMED_WINNER}
_STAGE = {"analyze": evidence_pb2.ANALYZED, "compile": evidence_pb2.COMPILED,
          "validate": evidence_pb2.VALIDATED}


def _exact_ints(value, desc: pbd.Descriptor):
    """MessageToDict's output with 64-bit integers as JSON integers where exact (|v| <= 2^53);
    larger ones stay decimal strings."""
    if not isinstance(value, dict):
        return value
    for f in desc.fields:
        if f.name not in value:
            continue
        if _is_map(f):
            vf = f.message_type.fields_by_name["value"]
            value[f.name] = {k: _field_value(v, vf) for k, v in value[f.name].items()}
        elif f.label == f.LABEL_REPEATED:
            value[f.name] = [_field_value(v, f) for v in value[f.name]]
        else:
            value[f.name] = _field_value(value[f.name], f)
    return value


def _field_value(v, f: pbd.FieldDescriptor):
    if f.type == pbd.FieldDescriptor.TYPE_MESSAGE:
        return _exact_ints(v, f.message_type)
    if f.type in _INT64 and isinstance(v, str) and abs(int(v)) <= _EXACT:
        return int(v)
    return v


def _json(msg) -> dict:
    return _exact_ints(json_format.MessageToDict(msg, preserving_proto_field_name=True),
                       msg.DESCRIPTOR)


def _summary(c: evidence_pb2.Candidate) -> dict:
    return {
        "id": c.id, "contract_id": c.contract_id,
        "state": evidence_pb2.CandidateState.Name(c.state),
        "rejected_at": evidence_pb2.CandidateState.Name(c.rejected_at)
        if c.state == evidence_pb2.REJECTED else "",
        "note": c.status_note,
        "eligibility": _json(c.eligibility),
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
        if name == "search":
            req = json_format.ParseDict(args, service_pb2.StartSearchRequest())
            return _json(self.client._call("StartSearch", req))
        if name == "search_status":
            return _json(self.client.get_search(args["search_id"]))
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
        return out


def _field_path(error: jsonschema.ValidationError) -> str:
    return "arguments" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                                 for p in error.absolute_path)


def build_server(tools: Tools) -> Server:
    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=n, description=d, input_schema=i, output_schema=o, annotations=a)
            for n, (d, i, o, a) in TOOLS.items()])

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
        if params.name in _ONE_OF:
            given = [k for k in _ONE_OF[params.name] if k in args]
            if len(given) != 1:
                a, b = _ONE_OF[params.name]
                raise MCPError(types.INVALID_PARAMS,
                               f"arguments: give exactly one of {a} and {b} (given: "
                               f"{', '.join(given) or 'neither'})", {"field": f"arguments.{a}"})
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
