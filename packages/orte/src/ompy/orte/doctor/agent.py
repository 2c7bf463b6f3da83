"""The remote half of ``ompy doctor``: ``python -m ompy.orte.doctor.agent ACTION``.

Started on each checked host through the remote shell, with the interpreter the job's daemons
would use.  Its request is one JSON object on standard input (nothing of it on the command line,
so a token never shows in ``ps``); its answer is one JSON line on standard output.  Actions:

``versions``
    the installed ompy layers and their versions, and the interpreter's version and path;
``connect-back``
    connect to the doctor's port the way a daemon connects to its launcher (``host`` if given,
    else the address the ssh connection came from) and send the token; answers which address
    was used, or why it failed;
``serve``
    listen on every interface the tcp BTL would use (``include``/``exclude``/``bridges`` as
    ``btl_tcp_if_*``), answer with their addresses and ports, then accept and drop
    connections until standard input closes;
``probe``
    probe the listeners of the other hosts (``peers``: host -> what their ``serve`` answered)
    from each local interface, pairing as the tcp BTL does (same subnet first), and answer the
    verdicts.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

from ompy.opal.readiness import readable

#: How long a connect back to the doctor may take (seconds).
CONNECT_TIMEOUT = 10.0


def versions(_request: dict[str, Any]) -> dict[str, Any]:
    from ompy.opal.layer import installed_layers

    return {
        "layers": {layer.name: layer.version for layer in installed_layers()},
        "python": sys.version.split()[0],
        "executable": sys.executable,
    }


def connect_back(request: dict[str, Any]) -> dict[str, Any]:
    host = request.get("host") or os.environ.get("SSH_CONNECTION", "").split(" ", 1)[0]
    host = host or "127.0.0.1"
    where = f"{host}:{request['port']}"
    try:
        with socket.create_connection((host, request["port"]), timeout=CONNECT_TIMEOUT) as sock:
            sock.sendall(request["token"].encode() + b"\n")
            answer = sock.recv(16)
    except OSError as error:
        return {"ok": False, "address": where, "error": f"cannot connect to {where}: {error}"}
    if answer != b"ok\n":
        return {"ok": False, "address": where, "error": f"{where} did not acknowledge the token"}
    return {"ok": True, "address": where}


def _interfaces(request: dict[str, Any]) -> list[Any]:
    from ompy.opal.net.interfaces import discover_interfaces, select_interfaces

    chosen = select_interfaces(
        discover_interfaces(),
        request.get("include", ()),
        request.get("exclude", ()),
        bridges=request.get("bridges", False),
    )
    return [i for i in chosen if not i.loopback]


def serve(request: dict[str, Any]) -> None:
    listeners = []
    card = []
    try:
        interfaces = _interfaces(request)
    except ValueError as error:  # an include entry that matches nothing here, a bad network
        print(json.dumps({"error": str(error)}), flush=True)
        return
    for interface in interfaces:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((interface.address, 0))
        sock.listen(64)
        sock.setblocking(False)
        listeners.append(sock)
        card.append(
            {
                "name": interface.name,
                "address": interface.address,
                "prefixlen": interface.prefixlen,
                "port": sock.getsockname()[1],
            }
        )
    print(json.dumps({"interfaces": card}), flush=True)
    stdin = sys.stdin.fileno()
    while True:
        ready = readable([stdin, *listeners], None)
        if stdin in ready and not os.read(stdin, 4096):
            break
        for sock in listeners:
            if sock in ready:
                try:
                    accepted, _address = sock.accept()
                except OSError:
                    continue
                accepted.close()
    for sock in listeners:
        sock.close()


def probe(request: dict[str, Any]) -> dict[str, Any]:
    import ipaddress

    from ompy.opal.net.interfaces import discover_interfaces
    from ompy.opal.net.reach import Probe, Reachability

    local = _interfaces(request)
    reach = Reachability(
        request["timeout"],
        own_addresses=[i.address for i in discover_interfaces()],
        timeout_param="the doctor's --probe-timeout",
    )
    plan: dict[str, list[tuple[Any, dict[str, Any]]]] = {}
    for peer, card in request["peers"].items():
        pairs: list[tuple[Any, dict[str, Any]]] = []
        for interface in local:
            same = [
                a
                for a in card
                if interface.ip
                in ipaddress.IPv4Network(f"{a['address']}/{a['prefixlen']}", strict=False)
            ]
            pairs.extend((interface, a) for a in same or card)
        plan[peer] = pairs
    reach.probe(
        Probe(i.name, i.address, a["address"], a["port"])
        for pairs in plan.values()
        for i, a in pairs
    )
    answer = {}
    for peer, pairs in plan.items():
        rows = []
        for interface, address in pairs:
            verdict = reach.verdict(interface.address, address["address"])
            rows.append(
                {
                    "local": interface.name,
                    "local_address": interface.address,
                    "remote": address["name"],
                    "remote_address": address["address"],
                    "reachable": bool(verdict and verdict.reachable),
                    "reason": verdict.reason if verdict else "not probed",
                }
            )
        answer[peer] = rows
    return {"local": [i.name for i in local], "peers": answer}


ACTIONS = {"versions": versions, "connect-back": connect_back, "probe": probe}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in (*ACTIONS, "serve"):
        print(
            f"usage: python -m ompy.orte.doctor.agent {{{','.join([*ACTIONS, 'serve'])}}} "
            "< request.json",
            file=sys.stderr,
        )
        return 2
    action = argv[0]
    if action == "serve":
        request = json.loads(sys.stdin.readline() or "{}")
        serve(request)
        return 0
    request = json.loads(sys.stdin.read() or "{}")
    print(json.dumps(ACTIONS[action](request)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
