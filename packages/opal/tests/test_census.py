"""A census registers what everything installed declares and judges the user's settings once.

Only opal and its baseline shmem components are needed: the census finds whatever is installed.
"""

from __future__ import annotations

from ompy.opal.mca.census import judge_user_settings, register_installed_params
from ompy.opal.mca.params import Registry, environment_for_cli


def registry_with(**settings: str) -> Registry:
    return Registry(environ=environment_for_cli(settings), files=[])


def test_the_parameters_of_unopened_components_are_registered():
    registry = registry_with()
    census = register_installed_params(registry)
    assert "shmem_posix_min_free" in registry  # a component nobody opened
    assert "shmem_base_verbose" in registry  # the framework's own
    assert "shmem" in {framework.name for framework, _, _ in census.frameworks}


def test_nothing_to_say_about_good_settings():
    verdict = judge_user_settings(registry_with(shmem="posix", shmem_posix_min_free="0"))
    assert verdict.warnings == [] and verdict.errors == []


def test_a_misspelt_name_is_a_warning_with_the_closest_names():
    verdict = judge_user_settings(registry_with(shmem_posix_min_fre="1"))
    assert verdict.errors == []
    (warning,) = verdict.warnings
    assert "'shmem_posix_min_fre'" in warning and "did you mean 'shmem_posix_min_free'" in warning


def test_a_bad_value_is_an_error_even_for_a_component_not_selected():
    verdict = judge_user_settings(registry_with(shmem="mmap", shmem_posix_min_free="lots"))
    (error,) = verdict.errors
    assert "shmem_posix_min_free" in error and "'lots'" in error


def test_selecting_a_component_that_is_not_installed_is_an_error_naming_what_is():
    verdict = judge_user_settings(registry_with(shmem="posix,sysv"))
    (error,) = verdict.errors
    assert "no shmem component named 'sysv' is installed" in error
    assert "installed shmem components:" in error and "posix" in error


def test_a_malformed_selection_is_an_error():
    verdict = judge_user_settings(registry_with(shmem="posix,^mmap"))
    (error,) = verdict.errors
    assert "mixes included and excluded" in error
