"""Sources of throw-away component distributions, not tests of this repository.

The round-trip test (integration/test_third_party_component.py) copies a distribution from
here, installs it with pip, and runs the distribution's own tests in a subprocess; collecting
them from the repository, where the component is not installed, would only fail to import.
"""

collect_ignore_glob = ["*/*"]
