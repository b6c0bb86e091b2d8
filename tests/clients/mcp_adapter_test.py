"""The MCP adapter (clients/mcp/cake_mcp.py) through the MCP SDK's own client over stdio, against
a real caked (no GPU): the tools and their proto-derived schemas, a proposal and its stages, an
illegal schedule's diagnostics, a malformed call (JSON-RPC error with the field path), refusals
by the daemon as error results, and no operator authority.

Run by CTest with the project venv's python (mcp installed by the bootstrap).
"""
import json
import os
import sys
import unittest

import anyio
import jsonschema
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

sys.path.insert(0, os.path.dirname(__file__))
from python_client_test import SOURCE, Daemon, mutual_tls_daemon  # noqa: E402

from cake import Client, Schedule  # noqa: E402

ADAPTER = os.path.join(SOURCE, "clients", "mcp", "cake_mcp.py")


class McpAdapterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        operator = Client(address="unix:" + os.path.join(cls.daemon.state, "caked.sock"),
                          token_file=os.path.join(cls.daemon.state, "tokens", "operator"))
        with open(os.path.join(SOURCE, "contracts", "gemm_bf16.textproto")) as f:
            reply = operator.create_contract(f.read(), baseline=Schedule.gemm())
        operator.close()
        cls.contract = reply.contract_id
        cls.baseline = reply.baseline_candidate

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def session(self, body):
        """Runs `body(session)` against a fresh adapter process."""
        params = StdioServerParameters(
            command=sys.executable, args=[ADAPTER],
            env={"CAKE_STATE_DIR": self.daemon.state,
                 "PYTHONPATH": os.environ.get("PYTHONPATH", "")})

        async def run():
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    return await body(s)

        return anyio.run(run)

    def test_exactly_the_agent_verbs_with_proto_schemas(self):
        tools = self.session(lambda s: s.list_tools()).tools
        names = sorted(t.name for t in tools)
        self.assertEqual(names, ["analyze", "compile", "inspect", "measure", "propose", "search",
                                 "search_status", "status", "validate"])
        propose = next(t for t in tools if t.name == "propose")
        props = propose.input_schema["properties"]
        self.assertEqual(propose.input_schema["required"], ["contract_id"])
        # MCP's conventions: a plain object at the top of every input schema, annotations, and
        # an output schema for each tool (all of them return data).
        for t in tools:
            self.assertEqual(t.input_schema["type"], "object", t.name)
            self.assertFalse({"oneOf", "anyOf", "allOf"} & set(t.input_schema), t.name)
            self.assertIsNotNone(t.annotations, t.name)
            self.assertIsNotNone(t.output_schema, t.name)
            self.assertEqual(t.output_schema["type"], "object", t.name)
        read_only = sorted(t.name for t in tools if t.annotations.read_only_hint)
        self.assertEqual(read_only, ["analyze", "compile", "inspect", "search_status", "status",
                                     "validate"])
        search = next(t for t in tools if t.name == "search")
        self.assertEqual(search.input_schema["required"], ["contract_id", "budget_seconds"])
        self.assertFalse(search.annotations.idempotent_hint)
        measure = next(t for t in tools if t.name == "measure")
        self.assertFalse(measure.annotations.idempotent_hint)
        self.assertFalse(measure.annotations.destructive_hint)
        self.assertIn("members", props["portfolio"]["properties"])
        # Derived from cake.v1.ProposeRequest and cake.evidence.Hypothesis.
        self.assertIn("idempotency_key", props)
        self.assertEqual(props["hypothesis"]["properties"]["changed_decisions"]["type"], "array")

    def test_propose_then_each_stage(self):
        s = Schedule.gemm().with_tile(128, 64, 32)

        async def body(sess):
            r = await sess.call_tool("propose", {
                "contract_id": self.contract, "schedule_text": s.text(),
                "hypothesis": {"parent": self.baseline, "changed_decisions": ["tile"],
                               "expected_effect": "more CTAs on small N",
                               "falsification": "not FASTER on the small rows"}})
            self.assertFalse(r.is_error, r.content)
            cid = r.structured_content["candidate_id"]
            a = await sess.call_tool("analyze", {"candidate_id": cid, "wait_s": 300})
            c = await sess.call_tool("compile", {"candidate_id": cid, "wait_s": 300})
            v = await sess.call_tool("validate", {"candidate_id": cid, "wait_s": 60})
            i = await sess.call_tool("inspect", {"candidate_id": cid})
            d = await sess.call_tool("inspect", {"candidate_id": cid,
                                                 "sections": ["DIAGNOSTICS", "RECEIPT"]})
            small = await sess.call_tool("inspect", {"candidate_id": cid, "sections": ["RECEIPT"],
                                                     "max_bytes": 2048})
            self.assertFalse(d.is_error, d.content)
            self.assertEqual(d.structured_content["granted"], ["DIAGNOSTICS", "RECEIPT"])
            self.assertIn("sass_census", d.structured_content["candidate"]["receipt"])
            # The summary leaves the SASS census out; a tight bound names what it left out.
            self.assertNotIn("sass_census", i.structured_content["candidate"].get("receipt", {}))
            self.assertEqual(small.structured_content.get("omitted"), ["RECEIPT"])
            return a.structured_content, c.structured_content, v.structured_content, \
                i.structured_content

        a, c, v, i = self.session(body)
        self.assertEqual(a["analysis"]["verdict"], "VERIFIED")
        self.assertEqual(c["receipt"]["outcome"], "PASS")
        # No GPU here: validation evidence is missing, and says why; missing is not success.
        self.assertEqual(v["state"], "COMPILED")
        self.assertIn("no execution device", v["note"])
        self.assertFalse(v["eligibility"].get("eligible", False))
        self.assertEqual(i["candidate"]["state"], "COMPILED")
        self.assertTrue(any(b.startswith("resources (sm_120f receipt): ") for b in i["bottlenecks"]),
                        i["bottlenecks"])
        self.assertTrue(any(b.startswith("missing evidence: ") for b in i["bottlenecks"]),
                        i["bottlenecks"])
        self.assertIn("gemm_bf16_tn", i["contract_summary"])

    def test_a_portfolio_is_proposed_with_its_members_inline(self):
        skinny = (Schedule.gemm().with_tile(32, 128, 64).with_warps(1, 4).with_swizzle(128)
                  .pipeline(stages=4, transfer="tma").with_split_k(2))
        portfolio = {
            "name": "skinny_then_baseline",
            "members": [{"name": "skinny", "schedule_text": skinny.text(),
                         "guard": {"scalars": [{"scalar": "M", "min": 1, "max": 64}]}}],
            "fallback": {"name": "general", "schedule_text": Schedule.gemm().text()}}
        hypothesis = {"parent": self.baseline, "changed_decisions": ["portfolio"],
                      "expected_effect": "split K for M <= 64 through MCP",
                      "falsification": "paired timing is not FASTER on any row"}

        async def body(sess):
            r = await sess.call_tool("propose", {"contract_id": self.contract,
                                                 "portfolio": portfolio,
                                                 "hypothesis": hypothesis})
            self.assertFalse(r.is_error, r.content)
            cid = r.structured_content["candidate_id"]
            a = await sess.call_tool("analyze", {"candidate_id": cid, "wait_s": 300})
            errors = []
            for args in ({"contract_id": self.contract},  # neither
                         {"contract_id": self.contract, "portfolio": portfolio,
                          "schedule_text": Schedule.gemm().text()}):  # both
                try:
                    await sess.call_tool("propose", args)
                    errors.append(None)
                except MCPError as e:
                    errors.append(e)
            return a.structured_content, errors

        a, errors = self.session(body)
        self.assertEqual(a["analysis"]["verdict"], "VERIFIED", a["note"])
        self.assertNotEqual(a["state"], "REJECTED", a["note"])
        self.assertTrue(all(e is not None for e in errors), errors)
        self.assertTrue(all("give exactly one of schedule_text and portfolio" in e.message
                            for e in errors), [e.message for e in errors])

    def test_an_illegal_schedule_gets_diagnostics_with_repairs(self):
        bad = Schedule.gemm().with_tile(256, 256, 64).pipeline(stages=4)

        async def body(sess):
            vague = await sess.call_tool("propose", {
                "contract_id": self.contract, "schedule_text": bad.text(),
                "hypothesis": {"parent": self.baseline, "changed_decisions": ["tile"],
                               "expected_effect": "make it faster",
                               "falsification": "it is not faster"}})
            r = await sess.call_tool("propose", {
                "contract_id": self.contract, "schedule_text": bad.text(),
                "hypothesis": {"parent": self.baseline, "changed_decisions": ["tile", "stages"],
                               "expected_effect": "a 256x256 tile halves global loads per flop",
                               "falsification": "the paired run is not FASTER on the 8k rows"}})
            self.assertFalse(r.is_error, r.content)
            return vague, (await sess.call_tool("analyze", {
                "candidate_id": r.structured_content["candidate_id"],
                "wait_s": 300})).structured_content

        vague, a = self.session(body)
        self.assertTrue(vague.is_error)
        self.assertIn("INVALID_ARGUMENT: hypothesis.expected_effect", vague.content[0].text)
        self.assertEqual(a["state"], "REJECTED")
        diag = {d["id"]: d for d in a["diagnostics"]}
        self.assertIn("DIAG_SHARED_BUDGET_EXCEEDED", diag)
        self.assertTrue(diag["DIAG_SHARED_BUDGET_EXCEEDED"]["repair"])

    def test_malformed_calls_are_jsonrpc_errors_with_the_field_path(self):
        async def call(name, args):
            try:
                await self.session_obj.call_tool(name, args)
            except MCPError as e:
                return e
            return None

        async def body(sess):
            self.session_obj = sess
            return [await call("propose", {"contract_id": self.contract, "schedule_text": 7}),
                    await call("propose", {"contract_id": self.contract, "schedule_text": "x",
                                           "hypothesis": {"changed_decisions": "tile"}}),
                    await call("measure", {}),
                    await call("create_contract", {})]

        errors = self.session(body)
        self.assertTrue(all(e is not None for e in errors), errors)
        self.assertIn("arguments.schedule_text", errors[0].message)
        self.assertIn("arguments.hypothesis.changed_decisions", errors[1].message)
        self.assertIn("candidate_id", errors[2].message)
        self.assertIn("no tool 'create_contract'", errors[3].message)  # no operator verbs

    def test_read_only_tools_return_what_their_output_schemas_say(self):
        async def body(sess):
            tools = {t.name: t for t in (await sess.list_tools()).tools}
            calls = {"status": {}, "inspect": {"contract_id": self.contract},
                     "analyze": {"candidate_id": self.baseline, "wait_s": 60},
                     "compile": {"candidate_id": self.baseline, "wait_s": 120},
                     "validate": {"candidate_id": self.baseline, "wait_s": 1}}
            out = {n: await sess.call_tool(n, a) for n, a in calls.items()}
            both = None
            try:
                await sess.call_tool("inspect", {"contract_id": self.contract,
                                                 "candidate_id": self.baseline})
            except MCPError as e:
                both = e
            return tools, out, both

        tools, out, both = self.session(body)
        for name, result in out.items():
            self.assertFalse(result.is_error, (name, result.content))
            jsonschema.validate(result.structured_content, tools[name].output_schema)
        # int64 fields are JSON integers in every tool (the status's job counts, the receipt's).
        self.assertIsInstance(out["status"].structured_content.get("queued_jobs", 0), int)
        receipt = out["compile"].structured_content["receipt"]
        self.assertIsInstance(receipt["resources"]["shared_dynamic_bytes"], int)
        # eligibility is one object everywhere.
        for name in ("analyze", "compile", "validate"):
            self.assertIsInstance(out[name].structured_content["eligibility"], dict, name)
        self.assertIsNotNone(both)
        self.assertIn("exactly one of candidate_id and contract_id", both.message)

    def test_daemon_refusals_come_back_as_error_results(self):
        async def body(sess):
            big = await sess.call_tool("propose", {"contract_id": self.contract,
                                                   "schedule_text": "#" * (300 << 10)})
            measure = await sess.call_tool("measure", {"candidate_id": self.baseline})
            missing = await sess.call_tool("inspect", {"candidate_id": "c404-nothing"})
            # No GPU here: a search is refused; a budget of 0 first, naming the field.
            zero = await sess.call_tool("search", {"contract_id": self.contract,
                                                   "budget_seconds": 0})
            nodev = await sess.call_tool("search", {"contract_id": self.contract,
                                                    "budget_seconds": 60})
            return big, measure, missing, zero, nodev

        big, measure, missing, zero, nodev = self.session(body)
        self.assertTrue(zero.is_error)
        self.assertEqual(zero.structured_content["error"]["detail"]["field"], "budget_seconds")
        self.assertTrue(nodev.is_error)
        self.assertIn("no execution device", nodev.content[0].text)
        self.assertTrue(big.is_error)
        self.assertIn("INVALID_ARGUMENT", big.content[0].text)  # over the schedule-text limit
        self.assertIn("262144", big.content[0].text)
        # The refusal's detail names the field, the limit and the diagnostic, for programs.
        detail = big.structured_content["error"]["detail"]
        self.assertEqual(detail["field"], "schedule_text")
        self.assertEqual(detail["limit"], 262144)  # an int64 within 2^53 is a JSON integer
        self.assertTrue(measure.is_error)
        self.assertIn("FAILED_PRECONDITION", measure.content[0].text)
        self.assertTrue(missing.is_error)
        self.assertIn("NOT_FOUND", missing.content[0].text)


class McpOverTlsTest(unittest.TestCase):
    def test_the_adapter_reaches_a_mutual_tls_daemon_from_the_environment(self):
        daemon, pki = mutual_tls_daemon()
        try:
            params = StdioServerParameters(
                command=sys.executable, args=[ADAPTER],
                env={"CAKE_STATE_DIR": daemon.state, "CAKE_ADDR": daemon.address,
                     "CAKE_TLS_CA": pki["ca.pem"], "CAKE_TLS_CERT": pki["client.pem"],
                     "CAKE_TLS_KEY": pki["client.key"],
                     "PYTHONPATH": os.environ.get("PYTHONPATH", "")})

            async def run():
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        return await s.call_tool("status", {})

            result = anyio.run(run)
            self.assertFalse(result.is_error, result.content)
            self.assertIn("boot_id", json.dumps(result.structured_content))
        finally:
            daemon.stop()


if __name__ == "__main__":
    unittest.main()
