"""The head-node side of ``ompy run``: job model, mapping, session directory and orchestration.

The launcher allocates hosts (ras), maps ranks onto them, starts the ranks (plm), forwards their
output (iof) and applies the error policy (errmgr); :mod:`.runner` ties these together.  Nothing
here is imported by a rank (the fork server, :mod:`.forkserver`, runs in a process of its own).
"""
