"""`dsh.runtime.session.__all__` names exactly the package's public names, and each resolves."""

from __future__ import annotations

from types import ModuleType

import dsh.runtime.session as package


def test_all_is_honest() -> None:
    exported = list(package.__all__)
    assert exported == sorted(set(exported)), "sorted, no duplicates"
    for name in exported:
        assert hasattr(package, name), f"dsh.runtime.session.{name} is listed but missing"
    # a subpackage (`store`) is an attribute once imported, but not a name the package exports
    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }
    assert public == set(exported), f"public but unlisted: {sorted(public - set(exported))}"
