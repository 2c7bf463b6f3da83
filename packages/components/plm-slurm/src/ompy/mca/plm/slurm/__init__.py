"""The ``slurm`` plm component: one ``srun`` step starts the job's ``ompy daemon`` per node."""

__version__ = "0.1.0"

from .component import SlurmPlmComponent  # after __version__: component.py imports it

__all__ = ["SlurmPlmComponent", "__version__"]
