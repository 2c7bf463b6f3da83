"""A small in-process PMI server for the tests: one socket pair and one thread per rank.

It speaks PMI-2 records or PMI-1 lines (``versions`` says which inits it accepts), keeps one
key-value space, and makes fences wait for every rank.  Requests it does not know are answered
with ``rc=1``; an ``abort`` is recorded.
"""

from __future__ import annotations

import socket
import threading

from ompy.mca.ess.pmi.wire import decode_line, decode_record, encode_line, encode_record


class FakePmiServer:
    def __init__(self, size: int, versions: tuple[int, ...] = (2, 1), mapping: str = "") -> None:
        self.size = size
        self.versions = versions
        self.mapping = mapping or f"(vector,(0,1,{size}))"
        self.kvs: dict[str, str] = {}
        self.pending: dict[str, str] = {}
        self.aborts: list[dict[str, str]] = []
        self.finalized: set[int] = set()
        # what was put becomes visible when the last rank enters the fence
        self.barrier = threading.Barrier(size, action=self._publish, timeout=20)
        self.lock = threading.Lock()
        self.client_fds: list[int] = []
        self.threads: list[threading.Thread] = []
        for rank in range(size):
            ours, theirs = socket.socketpair()
            self.client_fds.append(theirs.detach())
            thread = threading.Thread(target=self._serve, args=(rank, ours), daemon=True)
            thread.start()
            self.threads.append(thread)

    def environ(self, rank: int, **extra: str) -> dict[str, str]:
        return {
            "PMI_FD": str(self.client_fds[rank]),
            "PMI_RANK": str(rank),
            "PMI_SIZE": str(self.size),
            "PMI_JOBID": "77.0",
            **extra,
        }

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=20)

    # -- serving ---------------------------------------------------------------------------

    def _serve(self, rank: int, sock: socket.socket) -> None:
        reader = sock.makefile("rb")
        with sock, reader:
            while True:
                line = reader.readline()
                if not line:
                    return
                init = decode_line(line)
                version = int(init["pmi_version"])
                if version not in self.versions:
                    sock.sendall(
                        encode_line("response_to_init", rc=-1, pmi_version=max(self.versions))
                    )
                    continue
                sock.sendall(
                    encode_line("response_to_init", rc=0, pmi_version=version, pmi_subversion=0)
                )
                if version == 2:
                    self._serve2(rank, sock, reader)
                else:
                    self._serve1(rank, sock, reader)
                return

    def _publish(self) -> None:
        with self.lock:
            self.kvs.update(self.pending)
            self.pending.clear()

    def _fence(self) -> None:
        self.barrier.wait()

    def _serve2(self, rank: int, sock: socket.socket, reader) -> None:
        while True:
            length = reader.read(6)
            if len(length) < 6:
                return
            request = decode_record(reader.read(int(length)))
            command = request["cmd"]
            if command == "fullinit":
                answer = {"rc": 0, "rank": rank, "size": self.size, "appnum": 0}
            elif command == "kvs-put":
                with self.lock:
                    self.pending[request["key"]] = request["value"]
                answer = {"rc": 0}
            elif command == "kvs-fence":
                self._fence()
                answer = {"rc": 0}
            elif command in {"kvs-get", "info-getjobattr"}:
                key = request["key"]
                value = self.mapping if key == "PMI_process_mapping" else self.kvs.get(key)
                answer = (
                    {"rc": 0, "found": "FALSE"}
                    if value is None
                    else {"rc": 0, "found": "TRUE", "value": value}
                )
            elif command == "abort":
                self.aborts.append(request)
                return
            elif command == "finalize":
                self.finalized.add(rank)
                sock.sendall(encode_record("finalize-response", rc=0))
                return
            else:
                answer = {"rc": 1, "errmsg": f"unknown command {command}"}
            sock.sendall(encode_record(f"{command}-response", **answer))

    def _serve1(self, rank: int, sock: socket.socket, reader) -> None:
        while True:
            line = reader.readline()
            if not line:
                return
            request = decode_line(line)
            command = request["cmd"]
            if command == "get_maxes":
                reply = encode_line("maxes", rc=0, kvsname_max=256, keylen_max=64, vallen_max=64)
            elif command == "get_my_kvsname":
                reply = encode_line("my_kvsname", rc=0, kvsname="kvs77")
            elif command == "put":
                with self.lock:
                    self.pending[request["key"]] = request["value"]
                reply = encode_line("put_result", rc=0)
            elif command == "barrier_in":
                self._fence()
                reply = encode_line("barrier_out", rc=0)
            elif command == "get":
                key = request["key"]
                value = self.mapping if key == "PMI_process_mapping" else self.kvs.get(key)
                reply = (
                    encode_line("get_result", rc=1)
                    if value is None
                    else encode_line("get_result", rc=0, value=value)
                )
            elif command == "abort":
                self.aborts.append(request)
                return
            elif command == "finalize":
                self.finalized.add(rank)
                sock.sendall(encode_line("finalize_ack", rc=0))
                return
            else:
                reply = encode_line(f"{command}_result", rc=1)
            sock.sendall(reply)
