"""Command-line tools of the MPI layer (``ompy info``)."""
