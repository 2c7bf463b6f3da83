"""The launcher half of ``ompy doctor``: the steps run against each host, and their findings.

Per host, in order (a failed step skips the later ones on that host, naming why):

1. ``ssh``: the remote shell (``plm_ssh_agent``) runs ``true`` there;
2. ``interpreter``: the interpreter the daemons would use (``plm_ssh_python``, else this one's
   path) runs there, and is the same Python version as here;
3. ``ompy``: ompy is importable there with the same layer versions as here;
4. ``connect-back``: from there, a connection reaches this process's listening port the way a
   daemon reaches its launcher (``plm_ssh_launcher_host``, else the ssh client address);

then, across the hosts that passed, 5. ``interfaces``: each host probes the others' interfaces
(those the tcp BTL would use, ``btl_tcp_if_*``) from each of its own, as the tcp BTL does before
its first send; a host that reaches some other host through no interface fails this step.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

AGENT_MODULE = "ompy.orte.doctor.agent"
STEPS = ("ssh", "interpreter", "ompy", "connect-back", "interfaces")


@attrs.frozen
class Finding:
    """The outcome of one step on one host."""

    host: str
    step: str
    status: str  # "ok", "failed" or "skipped"
    detail: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@attrs.frozen
class Settings:
    """What the doctor checks with (from ``--mca`` and the environment, as ``ompy run``)."""

    agent: tuple[str, ...] = ("ssh",)
    python: str = sys.executable
    launcher_host: str = ""
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    bridges: bool = False
    step_timeout: float = 30.0
    probe_timeout: float = 3.0


@attrs.frozen
class Outcome:
    """What a remote command did: exit status (None: timed out), stdout, stderr."""

    argv: tuple[str, ...]
    status: int | None
    stdout: str
    stderr: str

    def why(self) -> str:
        said = " / ".join(self.stderr.strip().splitlines()[-3:])
        how = "did not finish in time" if self.status is None else f"exited with {self.status}"
        return f"`{shlex.join(self.argv)}` {how}" + (f": {said}" if said else "")


def remote(settings: Settings, host: str, command: Sequence[str]) -> list[str]:
    """``command`` run on ``host`` through the remote shell (which joins words: quote them)."""
    return [*settings.agent, host, shlex.join(command)]


def run(argv: Sequence[str], request: Any = None, timeout: float = 30.0) -> Outcome:
    """Run ``argv`` with ``request`` as JSON on stdin; never raises for the command's failure."""
    try:
        done = subprocess.run(
            list(argv),
            input="" if request is None else json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            start_new_session=True,  # a terminal's Ctrl-C reaches the doctor, which stops them
        )
    except subprocess.TimeoutExpired as expired:
        return Outcome(tuple(argv), None, _text(expired.stdout), _text(expired.stderr))
    except OSError as error:
        return Outcome(tuple(argv), 127, "", str(error))
    return Outcome(tuple(argv), done.returncode, done.stdout, done.stderr)


def _text(data: bytes | str | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def _answer(outcome: Outcome) -> dict[str, Any] | None:
    """The agent's JSON answer (its last line), or None if it gave none."""
    lines = outcome.stdout.strip().splitlines()
    if outcome.status != 0 or not lines:
        return None
    try:
        answer = json.loads(lines[-1])
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


class ConnectBack:
    """The doctor's listening port: which host's token arrived (as a launcher's server)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("", 0))  # every interface, as the control server for remote daemons
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.tokens: dict[str, str] = {}
        self.arrived: set[str] = set()
        self._thread = threading.Thread(target=self._serve, name="doctor-connect-back", daemon=True)
        self._thread.start()

    def token_for(self, host: str) -> str:
        token = secrets.token_hex(16)
        self.tokens[token] = host
        return token

    def _serve(self) -> None:
        while True:
            try:
                conn, _address = self.sock.accept()
            except OSError:
                return  # closed
            with conn:
                conn.settimeout(5.0)
                try:
                    line = conn.makefile("rb").readline(64).strip().decode(errors="replace")
                    if line in self.tokens:
                        self.arrived.add(self.tokens[line])
                        conn.sendall(b"ok\n")
                except OSError:
                    continue

    def close(self) -> None:
        """Stop listening.  ``shutdown`` first: on Linux, closing a socket that another thread
        is blocked in ``accept`` on leaves it listening until that call returns."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(timeout=5)


def check_host(
    host: str, settings: Settings, back: ConnectBack, local_layers: dict[str, str]
) -> list[Finding]:
    """Steps 1-4 on one host; the findings in step order (later ones skipped after a failure)."""
    findings: list[Finding] = []
    timeout = settings.step_timeout

    def fail(step: str, detail: str) -> list[Finding]:
        findings.append(Finding(host, step, "failed", detail))
        index = STEPS.index(step)
        findings.extend(
            Finding(host, later, "skipped", f"{step} failed") for later in STEPS[index + 1 :]
        )
        return findings

    outcome = run(remote(settings, host, ["true"]), timeout=timeout)
    if outcome.status != 0:
        return fail("ssh", outcome.why())
    findings.append(Finding(host, "ssh", "ok", f"`{shlex.join(outcome.argv)}`"))

    mine = sys.version.split()[0]
    outcome = run(
        remote(
            settings, host, [settings.python, "-c", "import sys; print(sys.version.split()[0])"]
        ),
        timeout=timeout,
    )
    theirs = outcome.stdout.strip()
    if outcome.status != 0 or not theirs:
        return fail("interpreter", f"{settings.python} does not run there: {outcome.why()}")
    if theirs != mine:
        return fail(
            "interpreter",
            f"{settings.python} there is Python {theirs}, here Python {mine}; ranks must run "
            "the same version (set plm_ssh_python to a matching interpreter)",
        )
    findings.append(Finding(host, "interpreter", "ok", f"{settings.python} (Python {theirs})"))

    outcome = run(
        remote(settings, host, [settings.python, "-m", AGENT_MODULE, "versions"]), {}, timeout
    )
    answer = _answer(outcome)
    if answer is None:
        return fail("ompy", f"ompy cannot be imported by {settings.python} there: {outcome.why()}")
    layers = answer.get("layers", {})
    if layers != local_layers:
        differ = ", ".join(
            f"{name} {layers.get(name, 'missing')} there, {local_layers.get(name, 'missing')} here"
            for name in sorted(set(layers) | set(local_layers))
            if layers.get(name) != local_layers.get(name)
        )
        return fail("ompy", f"the installed ompy differs: {differ}")
    findings.append(
        Finding(host, "ompy", "ok", ", ".join(f"{n} {v}" for n, v in sorted(layers.items())))
    )

    request = {
        "host": settings.launcher_host,
        "port": back.port,
        "token": back.token_for(host),
    }
    outcome = run(
        remote(settings, host, [settings.python, "-m", AGENT_MODULE, "connect-back"]),
        request,
        timeout,
    )
    answer = _answer(outcome)
    if answer is None:
        return fail("connect-back", outcome.why())
    if not answer.get("ok") or host not in back.arrived:
        return fail(
            "connect-back",
            f"{answer.get('error') or 'the token did not arrive'} (a daemon there could not "
            "reach ompy run; set plm_ssh_launcher_host to an address of this host that "
            f"{host} can reach)",
        )
    findings.append(Finding(host, "connect-back", "ok", f"reached {answer['address']}"))
    return findings


def check_interfaces(hosts: Sequence[str], settings: Settings) -> list[Finding]:
    """Step 5 across ``hosts`` (those that passed 1-4): one finding per host."""
    request = {
        "include": list(settings.include),
        "exclude": list(settings.exclude),
        "bridges": settings.bridges,
    }
    servers: dict[str, subprocess.Popen[str]] = {}
    cards: dict[str, list[dict[str, Any]]] = {}
    findings: dict[str, Finding] = {}
    try:
        for host in hosts:
            servers[host] = subprocess.Popen(
                remote(settings, host, [settings.python, "-m", AGENT_MODULE, "serve"]),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            stdin = servers[host].stdin
            assert stdin is not None
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
        for host, server in servers.items():
            card = _first_line(server, settings.step_timeout)
            if card is None or "interfaces" not in card:
                said = (card or {}).get("error") or "no answer from the agent"
                findings[host] = Finding(
                    host, "interfaces", "failed", f"could not listen on its interfaces: {said}"
                )
            else:
                cards[host] = card["interfaces"]
        probing = [h for h in hosts if h in cards]

        def probe(host: str) -> Outcome:
            peers = {other: cards[other] for other in probing if other != host}
            return run(
                remote(settings, host, [settings.python, "-m", AGENT_MODULE, "probe"]),
                {**request, "timeout": settings.probe_timeout, "peers": peers},
                settings.step_timeout + settings.probe_timeout,
            )

        with ThreadPoolExecutor(max_workers=max(1, min(16, len(probing)))) as pool:
            outcomes = dict(zip(probing, pool.map(probe, probing), strict=True))
        for host, outcome in outcomes.items():
            findings[host] = _interface_finding(host, outcome, cards)
    finally:
        for server in servers.values():
            _stop(server)
    return [findings[h] for h in hosts if h in findings]


def _interface_finding(
    host: str, outcome: Outcome, cards: dict[str, list[dict[str, Any]]]
) -> Finding:
    answer = _answer(outcome)
    if answer is None:
        return Finding(host, "interfaces", "failed", f"the probes did not run: {outcome.why()}")
    if not cards[host]:
        return Finding(host, "interfaces", "failed", "no usable interface (btl_tcp_if_*?)")
    parts, unreached = [], []
    for peer, rows in answer["peers"].items():
        good = [
            f"{r['local']}->{r['remote']} {r['remote_address']}" for r in rows if r["reachable"]
        ]
        if good:
            parts.append(f"{peer}: {', '.join(good)}")
        else:
            tried = "; ".join(
                f"{r['local']} ({r['local_address']}) -> {r['remote_address']}: {r['reason']}"
                for r in rows
            )
            unreached.append(f"{peer} through no interface ({tried or 'nothing to try'})")
    if unreached:
        return Finding(host, "interfaces", "failed", "reaches " + "; ".join(unreached))
    return Finding(host, "interfaces", "ok", "; ".join(parts) or "no other host to reach")


def _first_line(process: subprocess.Popen[str], timeout: float) -> dict[str, Any] | None:
    """The JSON first line of a ``serve`` agent, or None if it ended or stayed silent."""
    result: list[str] = []
    stdout = process.stdout
    assert stdout is not None
    reader = threading.Thread(target=lambda: result.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not result or not result[0].strip():
        return None
    try:
        answer = json.loads(result[0])
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _stop(process: subprocess.Popen[str]) -> None:
    """End a ``serve`` agent: close its stdin (it exits), kill it if it lingers."""
    try:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def diagnose(
    hosts: Sequence[str],
    settings: Settings,
    local_layers: dict[str, str],
    progress: Callable[[Finding], None] = lambda finding: None,
) -> list[Finding]:
    """Every step on every host; ``progress`` sees each finding as it is made."""
    back = ConnectBack()
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
            per_host = list(pool.map(lambda h: check_host(h, settings, back, local_layers), hosts))
    finally:
        back.close()
    findings = [f for found in per_host for f in found if f.step != "interfaces"]
    for finding in findings:
        progress(finding)
    passed = [found[0].host for found in per_host if found[3].ok]
    skipped = [f for found in per_host for f in found if f.step == "interfaces"]
    interfaces = check_interfaces(passed, settings) if passed else []
    for finding in (*skipped, *interfaces):
        progress(finding)
    findings.extend(skipped)
    findings.extend(interfaces)
    order = {host: index for index, host in enumerate(hosts)}
    return sorted(findings, key=lambda f: (order[f.host], STEPS.index(f.step)))
