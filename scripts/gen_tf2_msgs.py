"""Build the ``tf2_msgs`` Python message package into a pip-installed ROS environment (no wheel exists for it).

The ROS wheels ship the rosidl generators, every dependency's headers and libraries, but no ``tf2_msgs``;
without it nothing can publish ``/tf``. This runs the same generators a colcon build would (``.msg`` -> ``.idl``
-> C, introspection / Fast DDS / dispatching C type support, Python) and compiles them with the system C/C++
compiler into the environment: libraries into ``<prefix>/lib`` (on the loader path the wheels set up), the Python
package into site-packages, headers and interface files into ``<prefix>/include|share/tf2_msgs``.

Usage: ``python scripts/gen_tf2_msgs.py [--force]`` with the environment's own interpreter. Idempotent: returns
at once when ``tf2_msgs.msg.TFMessage`` already imports. Exit status 0 on success, 1 with the failing step
otherwise (scripts/setup_env.sh reports it and carries on: nodes then publish no TF).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from importlib.metadata import entry_points
from pathlib import Path

PACKAGE = "tf2_msgs"
MESSAGES = {"TFMessage": "geometry_msgs/TransformStamped[] transforms\n"}
"""The interfaces of ros2/geometry2's tf2_msgs that tf2 listeners need (the services/actions are not used)."""
DEPENDENCIES = ("geometry_msgs", "std_msgs", "builtin_interfaces")
TYPESUPPORTS = ("introspection_c", "fastrtps_c")
"""Per-middleware C type supports; the dispatching ``rosidl_typesupport_c`` library picks one at run time."""


def _generator(kind: str, name: str):  # noqa: ANN202  (a rosidl_cli extension instance)
    group = f"rosidl_cli.command.generate.{kind}_extensions"
    for entry in entry_points(group=group):
        if entry.name == name:
            return entry.load()(name)
    raise RuntimeError(f"rosidl generator {kind}/{name} is not installed")


def generate(work: Path, prefix: Path) -> tuple[Path, Path]:
    """Run the rosidl generators; returns (C sources root, Python package dir)."""
    os.environ.setdefault("AMENT_PREFIX_PATH", str(prefix))  # the generators find their templates through it
    msg_dir = work / "msg_src" / "msg"
    msg_dir.mkdir(parents=True)
    for name, text in MESSAGES.items():
        (msg_dir / f"{name}.msg").write_text(text)
    from rosidl_adapter.msg import convert_msg_to_idl

    idl_root = work / "idl"
    idl_files = [convert_msg_to_idl(work / "msg_src", PACKAGE, Path("msg") / f"{n}.msg", idl_root / "msg")
                 for n in MESSAGES]  # fmt: skip
    interfaces = [f"{idl_root}:{p.relative_to(idl_root)}" for p in idl_files]
    includes = [str(prefix / "share")]
    c_root, py_root = work / "c" / PACKAGE, work / "py" / PACKAGE
    for kind, name in (("type", "c"), *(("typesupport", ts) for ts in TYPESUPPORTS), ("typesupport", "c")):
        _generator(kind, name).generate(PACKAGE, interfaces, includes, c_root)
    _generator("type", "py").generate(PACKAGE, interfaces, includes, py_root)
    (py_root / "__init__.py").touch()
    for name in MESSAGES:  # installed like a colcon build: .msg, .idl (and the type description) in share/
        share = work / "share" / "msg"
        share.mkdir(parents=True, exist_ok=True)
        shutil.copy(msg_dir / f"{name}.msg", share)
        shutil.copy(idl_root / "msg" / f"{name}.idl", share)
    return c_root, py_root


def _compile(out: Path, sources: list[Path], includes: list[Path], libs: list[str], libdir: Path,
             staged: Path | None = None) -> None:
    """One shared library; links against the libraries built so far (``staged``) and the environment's."""
    cpp = any(s.suffix == ".cpp" for s in sources)
    cmd = ["g++" if cpp else "gcc", "-shared", "-fPIC", "-O1", "-o", str(out), *map(str, sources)]
    cmd += [f"-I{i}" for i in includes] + [f"-L{staged or out.parent}", f"-L{libdir}", f"-Wl,-rpath,{libdir}"]
    cmd += [f"-l{lib}" for lib in libs]
    if cpp:
        cmd.insert(1, "-std=c++17")
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"compiling {out.name} failed:\n{' '.join(cmd)}\n{result.stderr[-3000:]}")


def build(c_root: Path, py_root: Path, prefix: Path, site: Path, work: Path) -> None:
    """Compile the generated sources and install them into ``prefix`` / ``site``."""
    import numpy

    libdir = prefix / "lib"
    inc = prefix / "include"
    # The prefix's include/ first: the system may have an older fastcdr whose headers the generated code cannot use.
    includes = [c_root.parent, inc, *sorted(p for p in inc.iterdir() if p.is_dir()),
                Path(sysconfig.get_paths()["include"]), Path(numpy.get_include())]
    msg = c_root / "msg"
    lib = f"{PACKAGE}__rosidl"
    deps = lambda suffix: [f"{d}__rosidl_{suffix}" for d in DEPENDENCIES]  # noqa: E731
    base = ["rosidl_runtime_c", "rcutils"]
    staged = work / "lib"
    staged.mkdir()

    def so(name: str) -> Path:
        return staged / f"lib{name}.so"

    _compile(so(f"{lib}_generator_c"), [*msg.glob("detail/*__functions.c"), *msg.glob("detail/*__description.c")],
             includes, [*deps("generator_c"), *base], libdir)  # fmt: skip
    _compile(so(f"{lib}_typesupport_introspection_c"), [*msg.glob("detail/*__type_support.c")], includes,
             [f"{lib}_generator_c", *deps("typesupport_introspection_c"), *deps("generator_c"), *base], libdir)
    _compile(so(f"{lib}_typesupport_fastrtps_c"), [*msg.glob("detail/*__type_support_c.cpp")], includes,
             [f"{lib}_generator_c", *deps("typesupport_fastrtps_c"), *deps("generator_c"),
              "rosidl_typesupport_fastrtps_c", "rosidl_typesupport_fastrtps_cpp", "fastcdr", "rmw", *base], libdir)
    _compile(so(f"{lib}_typesupport_c"), [*msg.glob("*__type_support.cpp")], includes,
             [f"{lib}_generator_c", "rosidl_typesupport_c", "rcpputils", *base], libdir)
    _compile(so(f"{lib}_generator_py"), [*(py_root / "msg").glob("*_s.c")], includes,
             [f"{lib}_generator_c", *deps("generator_py"), *deps("generator_c"), *base], libdir)
    for ts in ("c", *TYPESUPPORTS):  # the Python entry modules, one per type support, as rosidl_generator_py builds
        _compile(py_root / f"{PACKAGE}_s__rosidl_typesupport_{ts}.so",
                 [py_root / f"_{PACKAGE}_s.ep.rosidl_typesupport_{ts}.c"], includes,
                 [f"{lib}_generator_py", f"{lib}_typesupport_{ts}", f"{lib}_generator_c", *base], libdir, staged)
    # Install last, so a failure above leaves the environment untouched.
    for built in staged.iterdir():
        shutil.copy2(built, libdir / built.name)
    for target, source in ((site / PACKAGE, py_root), (inc / PACKAGE / PACKAGE, c_root), (prefix / "share" / PACKAGE,
                                                                                          work / "share")):
        if target.exists():
            shutil.rmtree(target)
        sources_only = shutil.ignore_patterns("*.c", "*.cpp") if target.parent == site else None
        shutil.copytree(source, target, ignore=sources_only)


def importable() -> bool:
    """True if a fresh interpreter imports ``tf2_msgs.msg.TFMessage`` and can serialise one (type support loads)."""
    code = ("from tf2_msgs.msg import TFMessage; from rclpy.serialization import serialize_message; "
            "assert serialize_message(TFMessage())")  # fmt: skip
    return subprocess.run([sys.executable, "-c", code], capture_output=True, check=False).returncode == 0


def main(argv: list[str] | None = None) -> int:
    """Generate, compile and install tf2_msgs unless it already works."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if tf2_msgs already imports")
    args = parser.parse_args(argv)
    if not args.force and importable():
        print(f"[{PACKAGE}] already importable")
        return 0
    prefix = Path(sys.prefix)
    site = Path(sysconfig.get_paths()["purelib"])
    try:
        with tempfile.TemporaryDirectory(prefix="gen_tf2_msgs_") as tmp:
            c_root, py_root = generate(Path(tmp), prefix)
            build(c_root, py_root, prefix, site, Path(tmp))
    except Exception as exc:  # noqa: BLE001  (reported; setup goes on without TF)
        print(f"[{PACKAGE}] could not be built: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if not importable():
        print(f"[{PACKAGE}] built but a fresh interpreter cannot import and serialise TFMessage", file=sys.stderr)
        return 1
    print(f"[{PACKAGE}] built into {prefix}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
