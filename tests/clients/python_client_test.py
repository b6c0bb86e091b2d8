"""The Python client and builder against a real caked (no GPU): defaults like cakectl's, a
contract from the bundled file with a builder-made baseline, proposals made with the builder, an
illegal one's diagnostics, the builder's refusals, role and idempotency errors.

Run by CTest with CAKED_PATH and CAKE_SOURCE_DIR set and PYTHONPATH=clients/python.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import grpc

from cake import CakeError, Client, Hypothesis, PortfolioMember, Schedule, ScheduleError
from cake import evidence_pb2, report_pb2

SOURCE = os.environ.get("CAKE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


class Daemon:
    """caked on a fresh state directory: on its socket, or with `flags` (a TCP --listen) on the
    address its log names (`address`)."""

    def __init__(self, flags=()):
        self.state = tempfile.mkdtemp(prefix="cake-python-client.")
        self.log = open(os.path.join(self.state, "caked.log"), "wb")
        self.scratch = []  # more folders to remove at stop
        self.proc = subprocess.Popen([os.environ["CAKED_PATH"], "--state-dir", self.state,
                                      "--no-gpu", *flags], stdout=subprocess.DEVNULL,
                                     stderr=self.log)
        sock = os.path.join(self.state, "caked.sock")
        self.address = "unix:" + sock
        for _ in range(200):
            if flags:
                said = re.search(r"caked listening on 127\.0\.0\.1:(\d+) ",
                                 open(self.log.name).read())
                if said:
                    self.address = "localhost:" + said.group(1)
                    return
            elif os.path.exists(sock) and os.path.exists(os.path.join(self.state, "tokens", "ci")):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("caked did not start: " + open(self.log.name).read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()
        for folder in [self.state, *self.scratch]:
            shutil.rmtree(folder, ignore_errors=True)


def make_pki(folder):
    """A CA, a server certificate for localhost, a client certificate: PEM paths by name."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    paths = {n: os.path.join(folder, n) for n in
             ("ca.key", "ca.pem", "server.key", "server.pem", "client.key", "client.pem",
              "req.csr", "ext")}
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", paths["ca.key"], "-out", paths["ca.pem"], "-days",
            "2", "-subj", "/CN=cake-test-ca")
    with open(paths["ext"], "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for who in ("server", "client"):
        openssl("req", *ec, "-keyout", paths[who + ".key"], "-out", paths["req.csr"], "-subj",
                "/CN=" + ("localhost" if who == "server" else "cake-agent"))
        openssl("x509", "-req", "-in", paths["req.csr"], "-CA", paths["ca.pem"], "-CAkey",
                paths["ca.key"], "-CAcreateserial", "-out", paths[who + ".pem"], "-days", "2",
                "-extfile", paths["ext"])
    return paths


def mutual_tls_daemon():
    """A caked on 127.0.0.1 under mutual TLS, and its PKI."""
    pki_dir = tempfile.mkdtemp(prefix="cake-pki.")
    pki = make_pki(pki_dir)
    daemon = Daemon(flags=["--listen", "127.0.0.1:0", "--tls-cert", pki["server.pem"],
                           "--tls-key", pki["server.key"], "--tls-client-ca", pki["ca.pem"]])
    daemon.scratch.append(pki_dir)
    return daemon, pki



class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        os.environ["CAKE_STATE_DIR"] = cls.daemon.state
        for v in ("CAKE_ADDR", "CAKE_TOKEN_FILE"):
            os.environ.pop(v, None)
        cls.client = Client()  # the defaults: the state directory's socket and operator token
        with open(os.path.join(SOURCE, "contracts", "gemm_bf16.textproto")) as f:
            reply = cls.client.create_contract(f.read(), baseline=Schedule.gemm())
        cls.contract = reply.contract_id
        cls.baseline = reply.baseline_candidate

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.stop()

    def test_status_through_the_defaults(self):
        s = self.client.status()
        self.assertTrue(s.boot_id)
        self.assertFalse(s.execution_device)
        self.assertIn("no execution device", s.device_note)
        self.assertIn(self.contract, [c.contract_id for c in s.contracts])
        # Each contract says where its execution target runs: nowhere on this configuration.
        mine = [c for c in s.contracts if c.contract_id == self.contract][0]
        self.assertIn("no execution device", mine.execution)

    def test_export_without_an_incumbent_is_refused_naming_the_contract(self):
        # Nothing is validated without a device: the contract has no incumbent to export.
        with self.assertRaises(CakeError) as e:
            self.client.export(self.contract, targets=["sm_90"])
        self.assertEqual(e.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn(f"contract {self.contract} has no incumbent", e.exception.message)

    def test_builder_default_is_the_bundled_schedule(self):
        # The same canonical schedule as examples/gemm_bf16.textproto: proposing it is a duplicate
        # of the baseline the contract was created with.
        with open(os.path.join(SOURCE, "examples", "gemm_bf16.textproto")) as f:
            r = self.client.propose(self.contract, f.read())
        self.assertTrue(r.duplicate)
        self.assertEqual(r.candidate_id, self.baseline)

    def test_a_built_variant_compiles_and_keeps_its_hypothesis(self):
        s = Schedule.gemm().with_tile(128, 64, 32).pipeline(stages=2)
        h = Hypothesis(parent=self.baseline, changed_decisions=list(s.changed),
                       expected_effect="a narrower tile fills more SMs on small N",
                       falsification="paired timing is not FASTER on the small rows")
        r = self.client.propose(self.contract, s, hypothesis=h, key="py-variant-1")
        self.assertFalse(r.duplicate)
        c = self.client.wait(r.candidate_id, timeout_s=300)
        self.assertEqual(c.state, evidence_pb2.COMPILED, c.status_note)
        self.assertIn("no execution device", c.status_note)
        self.assertEqual(c.receipt.outcome, report_pb2.LoweringReceipt.PASS)
        self.assertEqual(list(c.hypothesis.changed_decisions), ["tile", "pipeline"])
        # A retried proposal with the key gets the same candidate; the key on another schedule
        # is refused.
        self.assertEqual(self.client.propose(self.contract, s, key="py-variant-1").candidate_id,
                         r.candidate_id)
        with self.assertRaises(CakeError) as e:
            self.client.propose(self.contract, Schedule.gemm().pipeline(stages=4),
                                key="py-variant-1")
        self.assertEqual(e.exception.code, grpc.StatusCode.ALREADY_EXISTS)

    def test_an_illegal_schedule_comes_back_with_its_diagnostics(self):
        s = Schedule.gemm().with_tile(256, 256, 64).pipeline(stages=4)
        r = self.client.propose(self.contract, s)
        c = self.client.wait(r.candidate_id, timeout_s=300)
        self.assertEqual(c.state, evidence_pb2.REJECTED)
        self.assertEqual(c.rejected_at, evidence_pb2.ANALYZED)
        ids = [report_pb2.DiagId.Name(d.id) for d in c.diagnostics]
        self.assertIn("DIAG_SHARED_BUDGET_EXCEEDED", ids)
        shared = next(d for d in c.diagnostics if d.id == report_pb2.DIAG_SHARED_BUDGET_EXCEEDED)
        self.assertTrue(shared.repair)  # says how to repair it
        # Repaired as the diagnostic says (fewer stages, a smaller tile): it compiles.
        fixed = self.client.wait(self.client.propose(
            self.contract, s.with_tile(128, 128, 32).pipeline(stages=3).with_warps(2, 4)
        ).candidate_id, timeout_s=300)
        self.assertEqual(fixed.state, evidence_pb2.COMPILED, fixed.status_note)

    def test_a_swizzled_build_is_the_proposer_s_swizzled_point(self):
        # The same canonical schedule as the built-in proposer's "128x128x32 w2x2 s4 swz64":
        # proposing both gives one candidate.
        out = tempfile.mkdtemp(prefix="cake-space.")
        try:
            cakectl = os.path.join(os.path.dirname(os.environ["CAKED_PATH"]), "cakectl")
            subprocess.run([cakectl, "space", "gemm_bf16_tn", "--out", out], check=True,
                           stdout=subprocess.DEVNULL)
            labels = dict(line.split("\t")[::-1] for line in
                          open(os.path.join(out, "labels.txt")).read().splitlines())
            name = next(v for k, v in labels.items() if k.startswith("128x128x32 w2x2 s4 swz64"))
            with open(os.path.join(out, name)) as f:
                first = self.client.propose(self.contract, f.read())
        finally:
            shutil.rmtree(out)
        built = Schedule.gemm().pipeline(stages=4).with_swizzle(64)
        self.assertEqual(built.label(), "128x128x32 w2x2 s4 swz64")
        self.assertEqual(list(built.changed), ["pipeline", "swizzle"])
        again = self.client.propose(self.contract, built)
        self.assertTrue(again.duplicate, again)
        self.assertEqual(again.candidate_id, first.candidate_id)
        with self.assertRaises(ScheduleError):
            Schedule.gemm().with_swizzle(32)

    def test_a_tma_split_k_build_compiles(self):
        s = (Schedule.gemm().with_tile(32, 128, 64).with_warps(1, 4).with_swizzle(128)
             .pipeline(stages=4, transfer="tma").with_split_k(4))
        self.assertEqual(s.label(), "32x128x64 w1x4 s4 swz128 tma k4")
        self.assertIn("k_slices: 4", s.text())
        h = Hypothesis(parent=self.baseline, changed_decisions=list(s.changed),
                       expected_effect="four k slices fill the SMs that 32-row tiles leave idle",
                       falsification="paired timing is not FASTER on the skinny-M rows")
        self.assertEqual(list(s.changed), ["tile", "warps", "swizzle", "pipeline", "split_k"])
        c = self.client.wait(self.client.propose(self.contract, s, hypothesis=h).candidate_id,
                             timeout_s=300)
        self.assertEqual(c.state, evidence_pb2.COMPILED, c.status_note)
        with self.assertRaises(ScheduleError):
            Schedule.gemm().pipeline(stages=2, transfer="tma").module()  # padded rows

    def test_banded_persistent_and_staged_builds_compile(self):
        banded = (Schedule.gemm().with_tile(128, 128, 64).with_swizzle(128)
                  .pipeline(stages=3, transfer="tma").with_raster_bands(16).persistent())
        self.assertEqual(banded.label(), "128x128x64 w2x2 s3 swz128 tma g16 p")
        self.assertIn("raster_group_m: 16", banded.text())
        self.assertIn("persistent", banded.text())
        staged = Schedule.gemm().with_raster_bands(8).with_staged_store()
        self.assertEqual(staged.label(), "128x128x32 w2x2 s3 pad8 g8 st")
        self.assertIn("stage_in_shared: true", staged.text())
        for s in (banded, staged):
            h = Hypothesis(parent=self.baseline, changed_decisions=list(s.changed),
                           expected_effect="fewer DRAM reads per tile (" + s.label() + ")",
                           falsification="paired timing is not FASTER on the 8k rows")
            c = self.client.wait(self.client.propose(self.contract, s, hypothesis=h).candidate_id,
                                 timeout_s=300)
            self.assertEqual(c.state, evidence_pb2.COMPILED, c.status_note)
            self.assertEqual(c.receipt.launch.persistent, s is banded)
        for bad in (lambda: Schedule.gemm().with_raster_bands(0),
                    lambda: Schedule.gemm().with_raster_bands(257),
                    lambda: Schedule.gemm().persistent(-1),
                    lambda: Schedule.gemm().persistent().module(),  # a cp.async ring
                    lambda: Schedule.gemm().with_split_k(2).with_staged_store().module()):
            with self.assertRaises(ScheduleError):
                bad()

    def test_a_portfolio_compiles_every_member_under_its_guard(self):
        skinny = (Schedule.gemm().with_tile(32, 128, 64).with_warps(1, 4).with_swizzle(128)
                  .pipeline(stages=4, transfer="tma").with_split_k(2))
        members = [PortfolioMember("skinny", skinny, {"M": (1, 64, 0)})]
        h = Hypothesis(parent=self.baseline, changed_decisions=["portfolio"],
                       expected_effect="split K for M <= 64, the baseline elsewhere",
                       falsification="paired timing is not FASTER on any row")
        reply = self.client.propose_portfolio(self.contract, members, Schedule.gemm(),
                                              name="skinny_then_baseline", hypothesis=h)
        c = self.client.wait(reply.candidate_id, timeout_s=300)
        self.assertEqual(c.state, evidence_pb2.COMPILED, c.status_note)
        self.assertEqual(sorted(m.target for m in c.manifests), ["sm_120f", "sm_90"])
        for m in c.manifests:
            self.assertEqual([e.name for e in m.entries], ["skinny", "fallback"])
        # A guard naming a scalar the kernel lacks rejects the portfolio, naming the member.
        bad = [PortfolioMember("odd", skinny, {"Q": (1, 64, 0)})]
        c = self.client.wait(self.client.propose_portfolio(
            self.contract, bad, Schedule.gemm(), name="bad_guard", hypothesis=h).candidate_id,
            timeout_s=300)
        self.assertEqual(c.state, evidence_pb2.REJECTED)
        self.assertIn("odd", c.status_note)

    def test_the_builder_refuses_what_the_ir_cannot_express(self):
        for bad in (lambda: Schedule.gemm().with_tile(100, 128),
                    lambda: Schedule.gemm().with_tile(128, 128, 0),
                    lambda: Schedule.gemm().with_warps(3, 3),
                    lambda: Schedule.gemm().pipeline(stages=5),
                    lambda: Schedule.gemm().pipeline(stages=2, transfer="magic"),
                    lambda: Schedule.gemm().with_split_k(0),
                    lambda: Schedule.gemm().with_split_k(65),
                    lambda: Schedule.gemm(target="sm_999"),
                    lambda: Schedule.gemm().with_tile(16, 128).with_warps(2, 2).module()):
            with self.assertRaises(ScheduleError):
                bad()

    def test_roles_are_enforced(self):
        agent = Client(token_file=os.path.join(self.daemon.state, "tokens", "agent"))
        with open(os.path.join(SOURCE, "contracts", "gemm_bf16.textproto")) as f:
            text = f.read()
        with self.assertRaises(CakeError) as e:
            agent.create_contract(text)
        self.assertEqual(e.exception.code, grpc.StatusCode.PERMISSION_DENIED)
        self.assertIn("needs operator", e.exception.message)
        # An agent reads the contract without its held-out rows, and proposes.
        self.assertTrue(agent.contract(self.contract).contract.rows)
        # An agent's proposal states a specific hypothesis; a vague one is refused by name.
        s = Schedule.gemm().with_padding(16)
        with self.assertRaises(CakeError) as e:
            agent.propose(self.contract, s, hypothesis=Hypothesis(
                parent=self.baseline, changed_decisions=["padding"],
                expected_effect="optimise memory", falsification="it is not faster"))
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("hypothesis.expected_effect", e.exception.message)
        with self.assertRaises(CakeError) as e:
            agent.propose(self.contract, s)
        self.assertIn("hypothesis.parent", e.exception.message)
        r = agent.propose(self.contract, s, hypothesis=Hypothesis(
            parent=self.baseline, changed_decisions=list(s.changed),
            expected_effect="16-element padding removes ldmatrix bank conflicts, 3% lower latency",
            falsification="the paired run is not FASTER beyond the practical floor"))
        self.assertTrue(r.candidate_id)
        agent.close()
        with self.assertRaises(CakeError) as e:
            Client(token_file="/nonexistent/token")
        self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)


class TlsClientTest(unittest.TestCase):
    def test_mutual_tls_round_trip_and_a_client_without_a_certificate(self):
        daemon, pki = mutual_tls_daemon()
        try:
            token = os.path.join(daemon.state, "tokens", "operator")
            with Client(address=daemon.address, token_file=token, tls_ca=pki["ca.pem"],
                        tls_cert=pki["client.pem"], tls_key=pki["client.key"]) as c:
                self.assertTrue(c.status().boot_id)
            with Client(address=daemon.address, token_file=token, tls_ca=pki["ca.pem"]) as c:
                with self.assertRaises(CakeError) as refused:
                    c.status()
                self.assertEqual(refused.exception.code, grpc.StatusCode.UNAVAILABLE)
            with self.assertRaises(CakeError) as half:
                Client(address=daemon.address, token_file=token, tls_cert=pki["client.pem"])
            self.assertIn("go together", half.exception.message)
        finally:
            daemon.stop()


if __name__ == "__main__":
    unittest.main()
