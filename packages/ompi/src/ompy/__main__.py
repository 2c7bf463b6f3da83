"""``python -m ompy [options] script.py``: run a Python program so that a failure ends the job.

See :mod:`ompy.run` for the options and why.
"""

from ompy.run import main

if __name__ == "__main__":
    main()
