"""YTsaurus's ``yt/yt/tests/integration/cypress/test_cypress.py``, the parts on removing attributes, ported to one
node through ``yt.wrapper``.

Each test keeps its YTsaurus name, calls and expected outcomes; ``yt_commands_shim`` stands in for ``yt_commands``
(``//tmp`` is a fresh directory per test).

Ported: ``TestCypress::test_remove`` (its attribute part: removing a user attribute, a key inside one, missing
attributes and keys with and without ``force``, a builtin attribute that cannot be removed).

Skipped: the node part of ``test_remove`` (covered by ``test_yt_cypress.test_remove_recursive_and_force``) and
``//tmp/@recursive_resource_usage`` (an accounting attribute this server does not model).
"""

from __future__ import annotations

import pytest
import yt_commands_shim as ytc
from yt.common import YtError
from yt_commands_shim import get, raises_yt_error, remove, set


@pytest.fixture(autouse=True)
def _bind(yt, yt_root: str) -> None:
    ytc.bind(yt, yt_root)


def test_remove() -> None:
    set("//tmp/@test_attribute", 10)
    remove("//tmp/@test_attribute")

    for path in ["//tmp/@test_attribute", "//tmp/@test_attribute/inner"]:
        with pytest.raises(YtError):
            remove(path)

    for path in ["//tmp/@test_attribute", "//tmp/@test_attribute/inner"]:
        remove(path, force=True)

    for builtin_path in ["//tmp/@key", "//tmp/@key/inner"]:
        with raises_yt_error('Attribute "key" cannot be removed'):
            remove(builtin_path, force=True)


def test_remove_a_key_inside_a_user_attribute() -> None:
    """Not a YTsaurus test: ``remove //node/@attr/key`` (as ``remove("//tmp/map/n")`` of ``test_map`` on a node)
    removes one key of a map attribute and leaves the others; a missing key needs ``force``."""
    set("//tmp/@plans", {"a": 1, "b": {"c": 2}})
    remove("//tmp/@plans/a")
    assert get("//tmp/@plans") == {"b": {"c": 2}}
    remove("//tmp/@plans/b/c")
    assert get("//tmp/@plans") == {"b": {}}
    with pytest.raises(YtError):
        remove("//tmp/@plans/missing")
    remove("//tmp/@plans/missing", force=True)
    assert get("//tmp/@plans") == {"b": {}}
