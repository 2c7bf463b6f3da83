"""Errors of the shmem framework, each telling the user what went wrong and what to do.

Each error also derives from the built-in exception a Python programmer would expect
(``ValueError`` for a bad name, ``FileNotFoundError`` for a vanished segment, ``BufferError`` for
views that block a detach), so callers can catch either the precise or the familiar class.
"""

from __future__ import annotations


class ShmemError(Exception):
    """Base class of shared-memory errors."""


class InvalidSegmentNameError(ShmemError, ValueError):
    """A segment name that is not ``ompy-`` followed by a safe file-name token."""


class InvalidDescriptorError(ShmemError, ValueError):
    """A segment descriptor (usually received from a peer) that is malformed."""


class InvalidSegmentSizeError(ShmemError, ValueError):
    """A segment size that is not a positive integer."""


class SegmentExistsError(ShmemError, FileExistsError):
    """``create`` refused a name that is already in use: names are created exclusively."""


class SegmentNotFoundError(ShmemError, FileNotFoundError):
    """The segment a descriptor names no longer exists (unlinked, or its job has ended)."""


class SegmentSpaceError(ShmemError, OSError):
    """The backing file system has no room for the segment."""


class WrongComponentError(ShmemError, ValueError):
    """A descriptor was handed to a component other than the one that made the segment."""


class WrongNodeError(ShmemError, ValueError):
    """A descriptor made on another node: shared memory is shared within one node only."""


class SegmentBusyError(ShmemError, BufferError):
    """``detach`` was asked while memoryviews or arrays over the mapping are still alive."""


class SegmentDetachedError(ShmemError, ValueError):
    """The segment was detached from this process; its memory is no longer mapped here."""
