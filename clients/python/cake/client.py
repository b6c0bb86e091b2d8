"""A thin client of caked's gRPC API, with cakectl's defaults.

Address: `address`, else $CAKE_ADDR, else the first socket that exists of /run/caked/caked.sock
and STATE_DIR/caked.sock. Token: `token_file`, else $CAKE_TOKEN_FILE, else the first readable of
STATE_DIR/tokens/{operator,ci,agent}. STATE_DIR is $CAKE_STATE_DIR, default /var/lib/caked.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import grpc
from google.protobuf import text_format

from cake import contract_pb2, evidence_pb2, portfolio_pb2, service_pb2, service_pb2_grpc
from cake.builder import Schedule


@dataclass
class PortfolioMember:
    """A portfolio member: a schedule and its shape guard, {scalar: (min, max, multiple_of)}
    (max 0 = unbounded, multiple_of 0 or 1 = none)."""

    name: str
    schedule: str | Schedule
    guard: dict = field(default_factory=dict)

    def proto(self) -> portfolio_pb2.Member:
        m = portfolio_pb2.Member(name=self.name, schedule_text=(
            self.schedule.text() if isinstance(self.schedule, Schedule) else self.schedule))
        for scalar, (lo, hi, multiple) in sorted(self.guard.items()):
            m.guard.scalars.add(scalar=scalar, min=lo, max=hi, multiple_of=multiple)
        return m


class CakeError(Exception):
    """A refused call: `code` is the gRPC status code, the message the daemon's, and `detail`
    the ErrorDetail it carried (diagnostic_id, field, limit, earlier_candidate) or None."""

    def __init__(self, code: grpc.StatusCode, message: str,
                 detail: Optional[service_pb2.ErrorDetail] = None):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.detail = detail


def _error_detail(error: grpc.RpcError) -> Optional[service_pb2.ErrorDetail]:
    """The ErrorDetail of the standard grpc-status-details-bin trailer (google.rpc.Status)."""
    for key, value in (error.trailing_metadata() or ()):
        if key == "grpc-status-details-bin":
            status = service_pb2.RpcStatus.FromString(value)
            for any_detail in status.details:
                detail = service_pb2.ErrorDetail()
                if any_detail.Unpack(detail):
                    return detail
    return None


@dataclass
class Hypothesis:
    """What a proposal claims, so the claim can be checked against the evidence."""

    expected_effect: str
    falsification: str
    parent: str = ""
    changed_decisions: Sequence[str] = field(default_factory=tuple)

    def proto(self) -> evidence_pb2.Hypothesis:
        h = evidence_pb2.Hypothesis(parent=self.parent, expected_effect=self.expected_effect,
                                    falsification=self.falsification)
        h.changed_decisions.extend(self.changed_decisions)
        return h


def _state_dir() -> str:
    return os.environ.get("CAKE_STATE_DIR") or "/var/lib/caked"


def default_address() -> str:
    if os.environ.get("CAKE_ADDR"):
        return os.environ["CAKE_ADDR"]
    own = os.path.join(_state_dir(), "caked.sock")
    socks = ["/run/caked/caked.sock", own]
    if os.environ.get("CAKE_STATE_DIR"):
        socks.reverse()
    for s in socks:
        if os.path.exists(s):
            return "unix:" + s
    return "unix:" + socks[0]


def default_token_file() -> str:
    if os.environ.get("CAKE_TOKEN_FILE"):
        return os.environ["CAKE_TOKEN_FILE"]
    for role in ("operator", "ci", "agent"):
        p = os.path.join(_state_dir(), "tokens", role)
        if os.access(p, os.R_OK):
            return p
    return os.path.join(_state_dir(), "tokens", "operator")


def _channel_credentials(ca: Optional[str], cert: Optional[str],
                         key: Optional[str]) -> Optional[grpc.ChannelCredentials]:
    """TLS credentials from PEM files, or None for plaintext (no CA and no client cert)."""
    if not ca and not cert:
        return None
    if bool(cert) != bool(key):
        raise CakeError(grpc.StatusCode.INVALID_ARGUMENT,
                        "tls_cert and tls_key go together (a client certificate and its key)")

    def read(path):
        if not path:
            return None
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            raise CakeError(grpc.StatusCode.INVALID_ARGUMENT,
                            f"cannot read {path}: {e.strerror}") from None

    return grpc.ssl_channel_credentials(root_certificates=read(ca), private_key=read(key),
                                        certificate_chain=read(cert))


class Client:
    """One connection to caked. Methods return the reply messages (cake.service_pb2)."""

    def __init__(self, address: Optional[str] = None, token_file: Optional[str] = None,
                 timeout_s: float = 30.0, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None, tls_key: Optional[str] = None):
        """TLS (a daemon on TCP with tls_cert): `tls_ca` is the PEM CA that signed the daemon's
        certificate; `tls_cert` and `tls_key` a client certificate for mutual TLS. Each defaults
        to $CAKE_TLS_CA, $CAKE_TLS_CERT, $CAKE_TLS_KEY, as in cakectl."""
        self.address = address or default_address()
        path = token_file or default_token_file()
        try:
            with open(path, encoding="ascii") as f:
                token = f.read().strip()
        except (OSError, UnicodeDecodeError) as e:
            raise CakeError(grpc.StatusCode.UNAUTHENTICATED,
                            f"cannot read a token from {path}: {e}") from None
        if not token or not all(0x21 <= ord(c) <= 0x7E for c in token):
            raise CakeError(grpc.StatusCode.UNAUTHENTICATED,
                            f"{path} holds no token (64 hex digits caked wrote)")
        self._metadata = (("authorization", f"Bearer {token}"),)
        self._timeout = timeout_s
        options = [("grpc.max_receive_message_length", 64 << 20)]
        tls = _channel_credentials(tls_ca or os.environ.get("CAKE_TLS_CA"),
                                   tls_cert or os.environ.get("CAKE_TLS_CERT"),
                                   tls_key or os.environ.get("CAKE_TLS_KEY"))
        self._channel = (grpc.secure_channel(self.address, tls, options=options) if tls
                         else grpc.insecure_channel(self.address, options=options))
        self._stub = service_pb2_grpc.CakeServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method: str, request):
        try:
            return getattr(self._stub, method)(request, metadata=self._metadata,
                                               timeout=self._timeout)
        except grpc.RpcError as e:
            raise CakeError(e.code(), e.details() or "", _error_detail(e)) from None

    def status(self) -> service_pb2.StatusReply:
        return self._call("Status", service_pb2.StatusRequest())

    def create_contract(self, contract_text: str,
                        baseline: Optional[str | Schedule] = None) -> service_pb2.CreateContractReply:
        """A contract from its text proto; `baseline` (text or a Schedule) sets its baseline."""
        c = contract_pb2.Contract()
        text_format.Parse(contract_text, c)
        if baseline is not None:
            c.baseline_schedule = baseline.text() if isinstance(baseline, Schedule) else baseline
        return self._call("CreateContract", service_pb2.CreateContractRequest(contract=c))

    def contract(self, contract_id: str) -> service_pb2.GetContractReply:
        return self._call("GetContract", service_pb2.GetContractRequest(contract_id=contract_id))

    def propose(self, contract_id: str, schedule: str | Schedule,
                hypothesis: Optional[Hypothesis] = None,
                key: str = "", branch: str = "") -> service_pb2.ProposeReply:
        """A new candidate, or (reply.duplicate) the same schedule's record, or (reply.repeat_of)
        the record of the same hypothesis that failed before; reply.note says which."""
        text = schedule.text() if isinstance(schedule, Schedule) else schedule
        req = service_pb2.ProposeRequest(contract_id=contract_id, schedule_text=text,
                                         idempotency_key=key, branch=branch)
        if hypothesis is not None:
            req.hypothesis.CopyFrom(hypothesis.proto())
        return self._call("Propose", req)

    def propose_portfolio(self, contract_id: str, members: Sequence[PortfolioMember],
                          fallback: str | Schedule, name: str = "portfolio",
                          hypothesis: Optional[Hypothesis] = None, key: str = "",
                          branch: str = "") -> service_pb2.ProposeReply:
        """One candidate made of several schedules: `members` in dispatch order, each admitted
        only for the shapes its guard describes, then `fallback` for every other shape. The
        daemon compiles each under its guard and keeps a dispatcher manifest per target."""
        req = service_pb2.ProposeRequest(contract_id=contract_id, idempotency_key=key,
                                         branch=branch)
        req.portfolio.name = name
        for m in members:
            req.portfolio.members.append(m.proto())
        req.portfolio.fallback.name = "fallback"
        req.portfolio.fallback.schedule_text = (
            fallback.text() if isinstance(fallback, Schedule) else fallback)
        if hypothesis is not None:
            req.hypothesis.CopyFrom(hypothesis.proto())
        return self._call("Propose", req)

    def candidate(self, candidate_id: str) -> evidence_pb2.Candidate:
        return self._call("GetCandidate",
                          service_pb2.GetCandidateRequest(candidate_id=candidate_id))

    def inspect(self, candidate_id: str = "", contract_id: str = "", sections=(),
                max_bytes: int = 0) -> service_pb2.InspectReply:
        """The bounded view of a candidate or a contract: summary, bottlenecks, branches, recent
        failures; `sections` (names like "diagnostics") add detail while the reply fits."""
        req = service_pb2.InspectRequest(max_bytes=max_bytes)
        if candidate_id:
            req.candidate_id = candidate_id
        else:
            req.contract_id = contract_id
        for name in sections:
            req.sections.append(service_pb2.EvidenceSection.Value(name.upper()))
        return self._call("Inspect", req)

    def candidates(self, contract_id: str = "", branch: str = "") -> list:
        """Every candidate (summaries), newest first, across pages."""
        out, token = [], ""
        while True:
            page = self._call("ListCandidates", service_pb2.ListCandidatesRequest(
                contract_id=contract_id, page_size=200, page_token=token, branch=branch))
            out.extend(page.candidates)
            token = page.next_page_token
            if not token:
                return out

    def measure(self, candidate_id: str, key: str = "") -> int:
        return self._call("Measure", service_pb2.MeasureRequest(
            candidate_id=candidate_id, idempotency_key=key)).job_id

    def search(self, contract_id: str, budget_seconds: int, max_candidates: int = 0,
               batch: int = 0) -> service_pb2.SearchReport:
        """Starts the daemon's search on a contract (it runs on in the daemon); its report."""
        return self._call("StartSearch", service_pb2.StartSearchRequest(
            contract_id=contract_id, budget_seconds=budget_seconds,
            max_candidates=max_candidates, batch=batch))

    def get_search(self, search_id: str) -> service_pb2.SearchReport:
        return self._call("GetSearch", service_pb2.GetSearchRequest(search_id=search_id))

    def export(self, contract_id: str, targets: Sequence[str] = (),
               allow_unqualified: bool = False) -> service_pb2.ExportReply:
        """The contract incumbent's export folder as files in memory (ci or operator token);
        `cakectl export` writes the same files into a folder."""
        return self._call("Export", service_pb2.ExportRequest(
            contract_id=contract_id, targets=list(targets), allow_unqualified=allow_unqualified))

    def wait(self, candidate_id: str,
             until: Callable[[evidence_pb2.Candidate], bool] = None,
             timeout_s: float = 600.0, poll_s: float = 0.5) -> evidence_pb2.Candidate:
        """Polls the candidate until `until` holds (default: it stopped moving for its jobs:
        rejected, or settled at Compiled without a device, or measured/promoted)."""
        settled = until or (lambda c: c.state in (
            evidence_pb2.REJECTED, evidence_pb2.MEASURED, evidence_pb2.CONFIRMED_WINNER) or (
            c.state == evidence_pb2.COMPILED and "no execution device" in c.status_note))
        end = time.monotonic() + timeout_s
        while True:
            c = self.candidate(candidate_id)
            if settled(c):
                return c
            if time.monotonic() > end:
                raise TimeoutError(f"candidate {candidate_id} still "
                                   f"{evidence_pb2.CandidateState.Name(c.state)} after {timeout_s} s")
            time.sleep(poll_s)
