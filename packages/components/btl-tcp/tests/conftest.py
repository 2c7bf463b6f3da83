"""The ``pair`` fixture: two simulated ranks of the tcp BTL inside one process.

Both ranks share one progress engine and an in-memory modex, so a test can drive the protocol
step by step without starting processes.  Parametrize it indirectly with btl_tcp parameters.
"""

from __future__ import annotations

import pytest

from ompy.mca.btl.tcp import TcpBtlComponent
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.mca.params import Registry
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

SECRET = b"s" * 32
PROCS = [Proc("job", 0), Proc("job", 1)]


class Pair:
    """Two tcp components, one per simulated rank, progressed by one engine."""

    def __init__(self, **params: object) -> None:
        # Both simulated ranks finalize one after the other in one thread: don't wait for peers.
        environ = {"OMPY_MCA_btl_tcp_if_include": "lo", "OMPY_MCA_btl_tcp_finalize_timeout": "0"}
        environ.update({f"OMPY_MCA_btl_tcp_{k}": str(v) for k, v in params.items()})
        self.engine = ProgressEngine(spin_count=10)
        self.procs = PROCS
        self.secret = SECRET
        self.components, self.modules, self.inboxes = [], [], []
        for rank, modex in enumerate(InMemoryModex.group(2)):
            component = TcpBtlComponent(Registry(environ=environ))
            component.register_params()
            component.open()
            modules = component.query(BtlContext(PROCS[rank], modex, SECRET, self.engine)).module
            self.engine.register(component.progress)
            inbox: list[tuple[str, bytes]] = []
            for module in modules:
                module.register(
                    TAG_USR, lambda m, tag, view, inbox=inbox: inbox.append((m.name, bytes(view)))
                )
            modex.fence()
            self.components.append(component)
            self.modules.append(modules)
            self.inboxes.append(inbox)

    def close(self) -> None:
        for component, modules in zip(self.components, self.modules, strict=True):
            for module in modules:
                module.finalize()
            self.engine.unregister(component.progress)
            component.close()
        self.engine.close()


@pytest.fixture
def pair(request):
    pair = Pair(**getattr(request, "param", {}))
    yield pair
    pair.close()
