"""The ``ob1`` pml component: MPI matching and messaging protocols over BTL transports."""

__version__ = "0.1.0"

__all__ = ["__version__"]
