"""The layout rules of docs/architecture.md, read from the code's own imports (AST).

* ``annotation/`` (the generic Label Studio layer) and ``llm/`` (the model room, with the
  generic simulator) never import an instrument: no import of ``study`` (or ``app``) there;
* every import between rooms points down the levels of docs/architecture.md (app, study,
  annotation and ontology, llm, storage and the core);
* no import cycle anywhere among our modules, directly or through others, counting the
  imports inside functions too (a lazy import still ties two modules together);
* the rooms every instrument shares name no instrument in their code.

A module's length is a review prompt, not a rule checked here: a module is split where a
concept ends (docs/architecture.md, "Module size").
"""

from __future__ import annotations

import ast
import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "annotation", "app", "driftlens_core", "driftlens_plugins", "llm", "ontology", "storage",
    "study",
)  # fmt: skip


def _module_files() -> dict[str, Path]:
    """Every module of our packages by dotted name (packages by their ``__init__``)."""
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            if "migrations" in rel.parts:
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out[".".join(parts)] = path
    return out


def _imports(path: Path, module: str, known: set[str]) -> Iterator[str]:
    """The modules of ours that ``module`` imports anywhere in its file."""
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _resolve(alias.name, known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_pkg else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                # ``from pkg import submodule`` imports the submodule
                yield from _resolve(full if full in known else base, known)


def _resolve(name: str, known: set[str]) -> Iterator[str]:
    # ``import a.b.c`` names a.b.c; the nearest module of ours that exists
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            yield candidate
            return
        parts.pop()


def _graph() -> dict[str, set[str]]:
    files = _module_files()
    known = set(files)
    return {m: set(_imports(p, m, known)) - {m} for m, p in files.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_generic_rooms_import_no_instrument() -> None:
    graph = _graph()
    upward = sorted(
        f"{m} imports {t}"
        for m, targets in graph.items()
        if m.split(".")[0] in ("annotation", "llm")
        for t in targets
        if t.split(".")[0] in ("study", "app")
    )
    assert upward == []


#: The rooms of docs/architecture.md from the top down; a room imports only rooms below it
#: (rooms on one level, like annotation and ontology, import neither the other).
LEVELS: dict[str, int] = {
    "app": 6,
    "study": 5,
    "annotation": 4,
    "ontology": 4,
    "llm": 3,
    "driftlens_plugins": 2,
    "storage": 1,
    "driftlens_core": 1,
}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a room into one on its level or above it."""
    return sorted(
        f"{m} imports {t}"
        for m, targets in graph.items()
        for t in targets
        if m.split(".")[0] != t.split(".")[0] and LEVELS[m.split(".")[0]] <= LEVELS[t.split(".")[0]]
    )


def test_every_import_points_down() -> None:
    assert upward_imports(_graph()) == []


def test_the_arrow_check_sees_an_import_up_and_one_across() -> None:
    graph = {"ontology.x": {"study.y", "annotation.z", "llm.w"}, "app.a": {"study.y"}}
    assert upward_imports(graph) == [
        "ontology.x imports annotation.z",
        "ontology.x imports study.y",
    ]


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_cycle_finder_sees_a_lazy_two_module_cycle() -> None:
    # the finder itself: a -> b -> c -> a is one component, d stands alone
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


#: The rooms every instrument shares: their code names no instrument (docs/architecture.md).
SHARED_ROOMS = (
    "annotation", "llm", "storage", "driftlens_core", "ontology", "driftlens_plugins", "app/ui",
    "app/streamlit_app.py", "app/cli/root.py", "app/cli/compare_cmds.py", "app/cli/sim_cmds.py",
    "app/instruments.py", "app/pages/compare.py", "app/pages/runs.py", "app/cli/demo_cmds.py",
    "study/report",
)  # fmt: skip


def instrument_mentions(source: str, names: set[str]) -> list[str]:
    """Where code (not a docstring or comment) names an instrument: an import of one of its
    modules, or a string that is its name or one of its module or page names."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    forms = ("study.{}", "study/{}", "{}_cmds", "pages.{}", "pages/{}")
    marks = [form.format(n) for n in names for form in forms]
    found = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.Import):
            texts = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            texts = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            texts = [node.value]
        for text in texts:
            if text in names or any(m in text for m in marks):
                found.append(f"line {getattr(node, 'lineno', 0)}: {text[:60]!r}")
    return found


def unclaimed_pages() -> list[Path]:
    """The pages under ``app/pages`` that no instrument claims: shared rooms too.

    An instrument claims a page by listing it among its ``pages`` or by naming one of the
    page module's functions as a part (``runs_panel``)."""
    from driftlens_plugins import instruments

    claimed = {page.module for p in instruments() for page in p.pages}
    for plugin in instruments():
        for value in vars(plugin).values():
            if isinstance(value, str) and value.startswith("app.pages."):
                claimed.add(value.split(":", 1)[0])
    pages = sorted((ROOT / "app" / "pages").glob("*.py"))
    return [f for f in pages if f"app.pages.{f.stem}" not in claimed and f.stem != "__init__"]


def generic_command_modules() -> list[Path]:
    """The CLI root's own command modules (an instrument's come from its plugin)."""
    from app.cli.root import COMMAND_MODULES

    return [ROOT / (m.replace(".", "/") + ".py") for m in COMMAND_MODULES]


def test_the_pages_no_instrument_claims_are_checked_as_shared_rooms() -> None:
    names = {f.name for f in unclaimed_pages()}
    assert {"home.py", "runs.py", "compare.py", "jobs.py", "human_studies.py"} <= names
    assert not {"analysis.py", "conflicts.py", "ontology_rounds.py", "reasoning_runs.py"} & names


def test_shared_rooms_name_no_instrument() -> None:
    from driftlens_plugins import instruments

    names = {p.name for p in instruments()}
    assert {"reasoning", "conflicts", "disposition", "sources"} <= names
    files: list[Path] = []
    for room in SHARED_ROOMS:
        path = ROOT / room
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    files += unclaimed_pages()
    files += generic_command_modules()
    found = [
        f"{f.relative_to(ROOT)} {where}"
        for f in files
        if "migrations" not in f.parts
        for where in instrument_mentions(f.read_text(encoding="utf-8"), names)
    ]
    assert found == []


def test_the_mention_check_sees_an_import_a_module_string_and_a_name() -> None:
    source = (
        '"""Docstrings may say study.conflicts."""\n'
        "import study.conflicts.sim\n"
        "from study.sources import plan\n"
        'MODULES = ("app.cli.disposition_cmds",)\n'
        'if kind == "reasoning":\n'
        "    pass\n"
    )
    found = instrument_mentions(source, {"reasoning", "conflicts", "disposition", "sources"})
    assert [f.split(":")[0] for f in found] == ["line 2", "line 3", "line 4", "line 5"]


def _owner(module: str, names: set[str]) -> str | None:
    """The instrument a ``study`` module belongs to (``None``: a shared one)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "study" and len(parts) > 1 and parts[1] in names else None


def instrument_crossings(graph: dict[str, set[str]], names: set[str]) -> list[str]:
    """Imports from a shared ``study`` module into an instrument, or between instruments."""
    return sorted(
        f"{m} imports {t}"
        for m, targets in graph.items()
        if m.split(".")[0] == "study"
        for t in targets
        if _owner(t, names) is not None and _owner(m, names) != _owner(t, names)
    )


def test_no_shared_study_module_imports_an_instrument_nor_one_instrument_another() -> None:
    from driftlens_plugins import instruments

    names = {p.name for p in instruments()}
    assert instrument_crossings(_graph(), names) == []


def test_the_crossing_check_sees_a_shared_room_and_a_sibling() -> None:
    graph = {
        "study.cluster.x": {"study.sources.plan", "study.cluster.shards"},
        "study.reasoning.demo": {"study.sources.demo", "study.reasoning.sim"},
        "study.sources.plan": {"study.cluster.shards"},
    }
    assert instrument_crossings(graph, {"reasoning", "sources"}) == [
        "study.cluster.x imports study.sources.plan",
        "study.reasoning.demo imports study.sources.demo",
    ]


def test_no_cycle_between_the_sub_packages_of_study() -> None:
    packages: dict[str, set[str]] = {}
    for m, targets in _graph().items():
        if m.startswith("study.") and m.count(".") >= 1:
            own = m.split(".")[1]
            packages.setdefault(own, set()).update(
                t.split(".")[1]
                for t in targets
                if t.startswith("study.") and t.split(".")[1] != own
            )
    assert _cycles(packages) == []


# A spec's meaning lives in llm.specs.ModelSpec: code that tests the text of a spec for a
# provider's prefix drifts from it (ten such sites once disagreed on what "simulated" means).
SPEC_PREFIXES = ("sim/", "vllm/", "openai/", "openai-api/")


def spec_prefix_tests(source: str) -> list[str]:
    """Prefix tests on spec text: ``x.startswith("sim/")``, ``removeprefix``, ``"/sim/" in x``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "removeprefix")
            and node.args
        ):
            arg = node.args[0]
            texts = arg.elts if isinstance(arg, ast.Tuple) else [arg]
            for t in texts:
                if isinstance(t, ast.Constant) and str(t.value).startswith(SPEC_PREFIXES):
                    found.append(f"line {node.lineno}: .{node.func.attr}({t.value!r})")
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and any(isinstance(op, ast.In) for op in node.ops)
            and str(node.left.value) in ("/sim/", "sim/", "vllm/")
        ):
            found.append(f"line {node.lineno}: {node.left.value!r} in ...")
    return found


def test_no_prefix_test_on_spec_text_outside_the_spec_type() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} {hit}"
        for module, path in _module_files().items()
        if module != "llm.specs"
        for hit in spec_prefix_tests(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_spec_prefix_check_sees_each_form() -> None:
    source = (
        'a = m.startswith("sim/")\nb = m.removeprefix("sim/")\n'
        'c = "/sim/" in m\nd = m.startswith(("vllm/", "x"))\ne = m.startswith("simple")\n'
    )
    assert [h.split(":")[0] for h in spec_prefix_tests(source)] == [
        "line 1", "line 2", "line 3", "line 4",
    ]  # fmt: skip


# After the edge (CLI, page, config) a model spec travels as llm.specs.ModelSpec: a
# parameter typed ``ChatBackend | str`` takes raw text past it, to be parsed (or prefix-tested)
# again wherever it lands (24 signatures once did).


def _union_members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_members(node.left), *_union_members(node.right)]
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("Union", "Optional")
    ):
        inner = node.slice
        return [m for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner])
                for m in _union_members(e)]  # fmt: skip
    return [node]


def backend_or_text_unions(source: str) -> list[str]:
    """Type expressions that let a backend's place take spec text: ``ChatBackend | str``
    (either order, ``Union``/``Optional``, quoted annotations too), one per line."""
    found: dict[int, str] = {}
    trees: list[tuple[ast.AST, int | None]] = [(ast.parse(source), None)]
    while trees:
        tree, quoted_at = trees.pop(0)
        for node in ast.walk(tree):
            lineno: int = getattr(node, "lineno", 0)
            line = quoted_at if quoted_at is not None else lineno
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and ("ChatBackend" in node.value)
            ):
                with contextlib.suppress(SyntaxError):  # a quoted annotation
                    trees.append((ast.parse(node.value.strip(), mode="eval"), line))
            members = _union_members(node) if isinstance(node, ast.expr) else []
            names = {m.id for m in members if isinstance(m, ast.Name)}
            names |= {m.attr for m in members if isinstance(m, ast.Attribute)}
            if len(members) > 1 and {"ChatBackend", "str"} <= names:
                # a nested union (A | B | C) is seen at every level: the widest comes first
                found.setdefault(line, f"line {line}: {ast.unparse(node)}")
    return [found[k] for k in sorted(found)]


def test_no_backend_or_spec_text_union() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} {hit}"
        for path in _module_files().values()
        for hit in backend_or_text_unions(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_backend_union_check_sees_each_form() -> None:
    source = (
        "def f(a: ChatBackend | str) -> None: ...\n"
        "def g(a: str | llm.types.ChatBackend | None) -> None: ...\n"
        "X = Callable[[int], Union[ChatBackend, str]]\n"
        "def h(a: 'ChatBackend | str') -> None: ...\n"
        "def ok(a: ChatBackend | ModelSpec, b: str | None) -> None: ...\n"
    )
    assert [h.split(":")[0] for h in backend_or_text_unions(source)] == [
        "line 1", "line 2", "line 3", "line 4",
    ]  # fmt: skip


# A module is split where a concept ends and named for what it holds; a name that says it
# is another module's overflow (report_render.py beside report.py) says no concept.
OVERFLOW_SUFFIXES = ("_render", "_extra", "_more", "_rest", "_misc", "_helpers", "_part2")


def overflow_names(modules: list[str]) -> list[str]:
    """Modules named as another's overflow (``<name>_render``, ``_extra``, ``_part2``...)."""
    return sorted(m for m in modules if m.rsplit(".", 1)[-1].endswith(OVERFLOW_SUFFIXES))


def test_no_module_is_named_as_another_s_overflow() -> None:
    assert overflow_names(list(_module_files())) == []


def test_the_overflow_check_sees_a_suffix_and_not_a_concept() -> None:
    names = ["study.conflicts.report_render", "app.cli.misc", "study.x.report", "a.b_extra"]
    assert overflow_names(names) == ["a.b_extra", "study.conflicts.report_render"]


def launched_modules(source: str) -> list[str]:
    """The modules a source starts as processes: ``"-m", "pkg.mod"`` in a list or tuple."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List | ast.Tuple):
            values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            out += [str(b) for a, b in itertools.pairwise(values) if a == "-m" and b]
    return out


def upward_launches() -> list[str]:
    """Every module of ours a room starts as a process (``python -m``) from a room above it:
    an upward dependency no import check sees (a job runner launching ``app.cli``)."""
    found = []
    for module, path in _module_files().items():
        room = module.split(".")[0]
        for target in launched_modules(path.read_text(encoding="utf-8")):
            top = target.split(".")[0]
            if top in LEVELS and top != room and LEVELS[room] <= LEVELS[top]:
                found.append(f"{module} starts {target}")
    return sorted(found)


def test_no_room_starts_a_process_of_a_room_above_it() -> None:
    assert upward_launches() == []


def test_the_launch_check_sees_python_dash_m() -> None:
    src = 'cmd = [sys.executable, "-m", "app.cli", "--workspace", ws]\nx = ("-m", "llm.sim.server")'
    assert launched_modules(src) == ["app.cli", "llm.sim.server"]
