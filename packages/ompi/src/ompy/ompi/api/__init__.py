"""The MPI API behind ``from ompy import MPI``: communicators, requests, messages, environment.

``ompy/MPI.py`` re-exports what programs use; the modules here hold the code:

- :mod:`ompy.ompi.instance` (one level up) the per-process MPI state every object reaches
  through ``.instance``; :mod:`ompy.ompi.boot` brings it up and down with the run-time;
- :mod:`.communicator` what the PML sees of a communicator; :mod:`.comm` the ``Comm`` handles;
- :mod:`.request`, :mod:`.message` nonblocking operations and matched messages;
- :mod:`.pickled` the lowercase methods' object transport (pickle protocol 5, out-of-band buffers);
- :mod:`.internal` and :mod:`.cid` the library's own collectives on reserved negative tags;
- :mod:`.init` the world model (``Init``/``Finalize``, ``COMM_WORLD``); :mod:`.session` MPI-4
  sessions and process sets; :mod:`.from_group` communicators without a parent
  (``Create_from_group``, ``Create_group``) and their rendezvous channel;
  :mod:`.environment` Wtime and friends.
"""
