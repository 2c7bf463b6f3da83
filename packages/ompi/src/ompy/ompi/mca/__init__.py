"""The ompi layer's MCA frameworks: pml (and later bml, coll, op, topo, osc).

Each framework's interface lives in its own subpackage; its components are separate
distributions registered in the entry-point group ``ompy.mca.<framework>``.
"""
