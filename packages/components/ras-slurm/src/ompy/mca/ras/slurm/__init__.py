"""The ``slurm`` ras component: the allocation of the Slurm job ``ompy run`` runs in."""

__version__ = "0.1.0"

from .component import SlurmRasComponent  # after __version__: component.py imports it

__all__ = ["SlurmRasComponent", "__version__"]
