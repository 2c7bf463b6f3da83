"""The ``ob1`` component: builds the BML (and with it the BTLs), offers the ob1 module."""

from __future__ import annotations

from ompy.ompi.mca.bml import BmlContext
from ompy.ompi.mca.bml.base import select_bml
from ompy.ompi.mca.pml import PmlComponent
from ompy.ompi.mca.pml.context import PmlContext
from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType

from . import __version__
from .module import Ob1PmlModule


class Ob1PmlComponent(PmlComponent):
    """Open MPI's default PML: matching plus eager, rendezvous and RDMA-get protocols."""

    name = "ob1"
    version = __version__
    description = "matching and eager/rendezvous/RDMA protocols over the BTLs (through the BML)"
    default_priority = 20

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "send_pipeline_depth",
            ParamType.INT,
            16,
            "Fragments of one long message in flight at once (more overlaps better, uses more "
            "descriptors)",
            level=5,
            minimum=1,
        )
        self.register_param(
            "use_rdma",
            ParamType.BOOL,
            True,
            "Let the receiver read long messages with RDMA get when a transport offers it "
            "(false: always stream fragments)",
            level=5,
        )
        self.register_param(
            "fast_path",
            ParamType.BOOL,
            True,
            "Let a blocking receive from one same-node peer poll that peer's ring and match "
            "inline when only that peer's next message can satisfy it (false: every receive "
            "takes the general path; see docs/point-to-point.md)",
            level=6,
        )
        self.register_param(
            "fast_spins",
            ParamType.INT,
            100,
            "Empty polls a blocking receive from one same-node peer makes on that peer's ring "
            "before it takes the general path (0: poll once; see docs/point-to-point.md)",
            level=6,
            minimum=0,
        )
        self.register_param(
            "finalize_timeout",
            ParamType.FLOAT,
            30.0,
            "Seconds finalize waits for sends that still owe data to their receivers",
            level=7,
            minimum=0,
        )

    def query(self, context: PmlContext) -> Offer[Ob1PmlModule] | None:
        if not isinstance(context, PmlContext):
            raise TypeError(f"the ob1 pml needs a PmlContext to run, got {context!r}")
        bml = select_bml(BmlContext(context.btl_context, context.registry))
        module = Ob1PmlModule(
            context,
            bml,
            depth=self.param("send_pipeline_depth"),
            use_rdma=self.param("use_rdma"),
            finalize_timeout=self.param("finalize_timeout"),
            fast_path=self.param("fast_path"),
            fast_spins=self.param("fast_spins"),
            log=self.log,
        )
        return Offer(self.priority, module)
