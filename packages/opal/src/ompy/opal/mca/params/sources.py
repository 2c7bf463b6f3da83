"""Where a parameter value can come from, and how each source is read.

Precedence, highest first: the command line of ``ompy run --mca`` (handed to every rank as
``OMPY_MCA_<name>`` plus the name in ``OMPY_MCA_CLI_NAMES``), the environment (``OMPY_MCA_<name>``),
parameter files (``OMPY_MCA_PARAM_FILES``, colon separated, earlier files win), then the default
the code registered.  Every value we hand out remembers which of these it came from, so that an
error or ``ompy info`` can tell the user where to change it.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

ENV_PREFIX = "OMPY_MCA_"
#: Names (comma separated) whose ``OMPY_MCA_*`` variable was set by ``ompy run --mca``.
CLI_NAMES_VAR = "OMPY_MCA_CLI_NAMES"
PARAM_FILES_VAR = "OMPY_MCA_PARAM_FILES"
#: Variables with the parameter prefix that are not parameters themselves.
RESERVED_VARS = frozenset({CLI_NAMES_VAR, PARAM_FILES_VAR})


class SourceKind(enum.IntEnum):
    """Kinds of source, ordered by precedence (a larger value wins)."""

    DEFAULT = 0
    FILE = 1
    ENVIRONMENT = 2
    COMMAND_LINE = 3
    #: Set by code at run time (tests, tools); overrides everything.
    OVERRIDE = 4


@attrs.frozen
class Source:
    """One concrete origin of a value: the kind plus where exactly (file:line, variable)."""

    kind: SourceKind
    where: str = ""

    def __str__(self) -> str:
        labels = {
            SourceKind.DEFAULT: "default",
            SourceKind.FILE: "file",
            SourceKind.ENVIRONMENT: "environment",
            SourceKind.COMMAND_LINE: "command line",
            SourceKind.OVERRIDE: "set at run time",
        }
        label = labels[self.kind]
        return f"{label} ({self.where})" if self.where else label


DEFAULT_SOURCE = Source(SourceKind.DEFAULT)


@attrs.frozen
class Setting:
    """A raw, still unparsed value that a user gave for a name."""

    name: str
    text: str
    source: Source


class ParamFileError(ValueError):
    """A parameter file has a line that is not ``name = value``."""


def default_param_files() -> list[Path]:
    """Files read when ``OMPY_MCA_PARAM_FILES`` is unset: the user's, then the installation's."""
    return [
        Path.home() / ".ompy" / "mca-params.conf",
        Path(sys.prefix) / "etc" / "ompy" / "mca-params.conf",
    ]


def param_files_from(environ: Mapping[str, str]) -> list[Path]:
    """The parameter files to read, in precedence order."""
    listed = environ.get(PARAM_FILES_VAR)
    if listed is None:
        return default_param_files()
    return [Path(item) for item in listed.split(":") if item]


def read_param_file(path: Path) -> list[Setting]:
    """Parse one parameter file; a missing file is simply empty, a malformed line is an error."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    settings = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise ParamFileError(f"{path}:{number}: expected 'name = value', got {raw.strip()!r}")
        settings.append(
            Setting(name.strip(), value.strip(), Source(SourceKind.FILE, f"{path}:{number}"))
        )
    return settings


def read_environment(environ: Mapping[str, str]) -> list[Setting]:
    """Collect ``OMPY_MCA_<name>`` variables, marking those that ``ompy run --mca`` set."""
    from_cli = {n for n in environ.get(CLI_NAMES_VAR, "").split(",") if n}
    settings = []
    for var, value in environ.items():
        if not var.startswith(ENV_PREFIX) or var in RESERVED_VARS:
            continue
        name = var[len(ENV_PREFIX) :]
        if name in from_cli:
            source = Source(SourceKind.COMMAND_LINE, f"--mca {name}")
        else:
            source = Source(SourceKind.ENVIRONMENT, var)
        settings.append(Setting(name, value, source))
    return settings


def collect_settings(
    environ: Mapping[str, str], files: Iterable[Path] | None = None
) -> dict[str, Setting]:
    """Merge every user source into one winning setting per name."""
    chosen: dict[str, Setting] = {}
    paths = param_files_from(environ) if files is None else list(files)
    # Later files lose to earlier ones: read them lowest precedence first and let later reads win.
    layers = [read_param_file(path) for path in reversed(paths)]
    layers.append(read_environment(environ))
    for layer in layers:
        for setting in layer:
            current = chosen.get(setting.name)
            if current is None or setting.source.kind >= current.source.kind:
                chosen[setting.name] = setting
    return chosen


def environment_for_cli(overrides: Mapping[str, str]) -> dict[str, str]:
    """The variables a launcher exports so ranks see ``--mca`` values as command-line sourced."""
    env = {f"{ENV_PREFIX}{name}": value for name, value in overrides.items()}
    if overrides:
        env[CLI_NAMES_VAR] = ",".join(overrides)
    return env
