"""Pure-Python helpers built on ``ompy.MPI``, with mpi4py 4.1's ``mpi4py.util`` module names."""
