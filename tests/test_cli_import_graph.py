"""Every module of the fastgemm package imports on its own, and the import graph of the
package (imports inside functions included) has no cycle: the CLI sits on the library,
its subcommands on one shared module, and nothing imports back up."""

import ast
import importlib
from pathlib import Path

import pytest

import fastgemm

PACKAGE = Path(fastgemm.__file__).resolve().parent
# Compiled submodules (fastgemm._fastgemm): leaves of the graph.
EXTENSIONS = {"fastgemm." + p.name.split(".")[0] for p in PACKAGE.iterdir() if p.suffix in (".so", ".pyd")}
SOURCE = Path(__file__).resolve().parents[1] / "python" / "fastgemm"


def module_names(root: Path):
    """Python modules of the package (files in folders without __init__.py are data, such
    as the emulator's scanner script, loaded by path)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        folders = path.parent.relative_to(root).parts
        if not all((root.joinpath(*folders[:i]) / "__init__.py").is_file() for i in range(len(folders) + 1)):
            continue
        rel = path.relative_to(root).with_suffix("")
        parts = ["fastgemm", *rel.parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, known) -> set:
    """Modules of the package that `name` imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                # `from . import api` imports the submodule; `from . import sgemm` an attribute
                # of the package, which is an edge to the package itself.
                sub = f"{target}.{a.name}"
                out.add(sub if sub in known or sub in EXTENSIONS else target)
    return {m for m in out if m in known and m != name}


def find_cycle(graph):
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == "open":
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = "done"
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_the_import_graph_has_no_cycle():
    root = SOURCE if SOURCE.is_dir() else PACKAGE
    modules = module_names(root)
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert "fastgemm.cli" in graph and "fastgemm.cli.common" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    """The check itself: the shape the CLI once had (cli imports a helper module at the
    top, the helper imports cli inside a function) must be reported."""
    pkg = tmp_path / "fastgemm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text("from . import helper\n")
    (pkg / "helper.py").write_text("def f():\n    from .cli import main\n    return main\n")
    modules = module_names(pkg)
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert graph["fastgemm.helper"] == {"fastgemm.cli"}
    assert find_cycle(graph) in (["fastgemm.cli", "fastgemm.helper", "fastgemm.cli"],
                                 ["fastgemm.helper", "fastgemm.cli", "fastgemm.helper"])


def test_the_library_never_imports_the_cli():
    root = SOURCE if SOURCE.is_dir() else PACKAGE
    modules = module_names(root)
    for name, path in modules.items():
        if name.startswith("fastgemm.cli") or name == "fastgemm.__main__":
            continue
        assert not any(m.startswith("fastgemm.cli") for m in imports_of(name, path, modules)), name


@pytest.mark.parametrize("name", sorted(n for n in module_names(PACKAGE) if n != "fastgemm.__main__"))
def test_every_module_imports(name):
    importlib.import_module(name)
