"""The BTL framework's glue: module selection and the tag space."""

from __future__ import annotations

from .select import SelectedBtls, select_btls
from .tags import TAG_BTL, TAG_COUNT, TAG_MAX, TAG_OSC, TAG_PML, TAG_USR, check_tag, tag_range

__all__ = [
    "TAG_BTL",
    "TAG_COUNT",
    "TAG_MAX",
    "TAG_OSC",
    "TAG_PML",
    "TAG_USR",
    "SelectedBtls",
    "check_tag",
    "select_btls",
    "tag_range",
]
