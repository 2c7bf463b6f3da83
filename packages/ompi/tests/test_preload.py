"""The MPI layer's preload entry: every loaded component may prepare what forked ranks inherit."""

from __future__ import annotations

from ompy.ompi import preload
from ompy.opal.mca import discovery


def test_every_loaded_component_prepares_and_one_that_fails_stops_nobody(monkeypatch):
    prepared: list[str] = []

    class Broken:
        @classmethod
        def preload(cls) -> None:
            raise OSError("this kernel has no such system call")

    class Ready:
        @classmethod
        def preload(cls) -> None:
            prepared.append("ready")

    monkeypatch.setattr(discovery, "list_candidates", lambda group: (["candidate"], []))
    monkeypatch.setattr(discovery, "load_components", lambda fw, found: ([Broken, Ready], []))
    preload._import_components()

    rank_frameworks = [
        framework
        for framework in discovery.installed_frameworks(failures=[])
        if framework.layer in preload.RANK_LAYERS
    ]
    assert rank_frameworks, "the MPI layer's own frameworks are installed with it"
    assert prepared == ["ready"] * len(rank_frameworks)
