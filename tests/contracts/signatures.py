"""Call signatures read from Python source with ``ast`` (never imported), and compared the way mypy's stubtest does.

A stand-in (tests/doubles) and the real package are both read as text: the real one from its published wheel, so a
package that needs a Neuron device to import (optimum-neuron imports torch_neuronx and neuronx_distributed) can be
held to its own source on any machine.  ``compare`` lists every difference as one line with the name and both
signatures; an allowlist (a name -> why mapping) says why each known gap exists, and an allowlisted name that no
longer differs is reported too, so the list cannot go stale.
"""
from __future__ import annotations

import ast
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

KINDS = ("positional-only", "positional-or-keyword", "*args", "keyword-only", "**kwargs")
DECORATORS = ("classmethod", "staticmethod", "property")


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    default: str | None  # the default's source text, None when it has none
    annotation: str | None

    def text(self) -> str:
        star = {"*args": "*", "**kwargs": "**"}.get(self.kind, "")
        out = star + self.name + (": " + self.annotation if self.annotation else "")
        if self.default is not None:
            out += (" = " if self.annotation else "=") + self.default
        return out


@dataclass(frozen=True)
class Signature:
    name: str
    decorator: str | None  # classmethod, staticmethod, property, or None
    params: tuple[Param, ...]
    returns: str | None
    where: str = field(default="", compare=False)  # file:line it was read from

    def text(self) -> str:
        parts, kinds = [], [p.kind for p in self.params]
        for i, param in enumerate(self.params):
            if param.kind == "keyword-only" and "*args" not in kinds and (i == 0 or kinds[i - 1] != "keyword-only"):
                parts.append("*")
            parts.append(param.text())
            if param.kind == "positional-only" and (i + 1 == len(kinds) or kinds[i + 1] != "positional-only"):
                parts.append("/")
        head = f"@{self.decorator} " if self.decorator else ""
        returns = " -> " + self.returns if self.returns else ""
        return f"{head}def {self.name}({', '.join(parts)}){returns}"


def _annotation(node: ast.expr | None) -> str | None:
    """An annotation's text; a string annotation ("NeuronConfig") reads as the expression it holds."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.unparse(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return node.value
    return ast.unparse(node)


def signature(func: ast.FunctionDef | ast.AsyncFunctionDef, where: str = "") -> Signature:
    args = func.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = []
    for i, arg in enumerate(positional):
        kind = "positional-only" if i < len(args.posonlyargs) else "positional-or-keyword"
        default = defaults[i]
        text = None if default is None else ast.unparse(default)
        params.append(Param(arg.arg, kind, text, _annotation(arg.annotation)))
    if args.vararg:
        params.append(Param(args.vararg.arg, "*args", None, _annotation(args.vararg.annotation)))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(Param(arg.arg, "keyword-only", None if default is None else ast.unparse(default),
                            _annotation(arg.annotation)))
    if args.kwarg:
        params.append(Param(args.kwarg.arg, "**kwargs", None, _annotation(args.kwarg.annotation)))
    decorator = next((name for name in (_decorator_name(d) for d in func.decorator_list) if name in DECORATORS), None)
    return Signature(func.name, decorator, tuple(params), _annotation(func.returns), where)


def _name_of(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


class SourceTree:
    """Python files of a package, from a folder or straight out of a wheel (a zip), parsed on demand."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._zip = zipfile.ZipFile(root) if root.is_file() else None
        self._parsed: dict[str, ast.Module] = {}

    def has(self, path: str) -> bool:
        if self._zip is not None:
            return path in self._zip.namelist()
        return (self.root / path).is_file()

    def text(self, path: str) -> str:
        return self._zip.read(path).decode("utf-8") if self._zip is not None else (self.root / path).read_text()

    def module(self, path: str) -> ast.Module:
        if path not in self._parsed:
            self._parsed[path] = ast.parse(self.text(path), filename=path)
        return self._parsed[path]

    # ------------------------------------------------------------------ names
    def find_class(self, path: str, name: str) -> tuple[str, ast.ClassDef] | None:
        """The class ``name`` as seen from module ``path``: defined there, or imported into it from this tree."""
        module = self.module(path)
        for node in module.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return path, node
        for node in module.body:
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        target = self._resolve(path, node)
                        if target is not None:
                            return self.find_class(target, alias.name)
        return None

    def _resolve(self, path: str, node: ast.ImportFrom) -> str | None:
        """The file a ``from X import Y`` of module ``path`` reads, when it is in this tree."""
        if node.level:
            base = PurePosixPath(path).parent
            for _ in range(node.level - 1):
                base = base.parent
            parts = list(base.parts) + (node.module.split(".") if node.module else [])
        else:
            parts = (node.module or "").split(".")
        stem = "/".join(parts)
        for candidate in (stem + ".py", stem + "/__init__.py"):
            if self.has(candidate):
                return candidate
        return None

    def members(self, path: str, class_name: str) -> dict[str, Signature]:
        """Every method ``class_name`` has, its own first, then its bases' (in this tree) in MRO-ish order."""
        found = self.find_class(path, class_name)
        if found is None:
            raise LookupError(f"{path} has no class {class_name}")
        where, cls = found
        out: dict[str, Signature] = {}
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[node.name] = signature(node, f"{where}:{node.lineno}")
        for base in cls.bases:
            base_name = _name_of(base)
            if base_name and self.find_class(where, base_name) is not None:
                for name, sig in self.members(where, base_name).items():
                    out.setdefault(name, sig)
        return out

    def attributes(self, path: str, class_name: str) -> set[str]:
        """Names assigned in the class body (``task = "text-generation"``), its bases' included."""
        found = self.find_class(path, class_name)
        if found is None:
            return set()
        where, cls = found
        names = {t.id for node in cls.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
        for base in cls.bases:
            if isinstance(base, ast.Name):
                names |= self.attributes(where, base.id)
        return names

    def functions(self, path: str) -> dict[str, Signature]:
        return {node.name: signature(node, f"{path}:{node.lineno}") for node in self.module(path).body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def public(name: str) -> bool:
    return not name.startswith("_")


def differences(stand_in: Signature, real: Signature) -> list[str]:
    """What differs between two signatures, each as a short phrase (empty when they agree)."""
    out = []
    if stand_in.decorator != real.decorator:
        out.append(f"decorator {stand_in.decorator} != {real.decorator}")
    ours, theirs = list(stand_in.params), list(real.params)
    if [(p.name, p.kind) for p in ours] != [(p.name, p.kind) for p in theirs]:
        out.append("parameters (name, kind) differ")
    else:
        for mine, real_param in zip(ours, theirs, strict=True):
            if mine.default != real_param.default:
                out.append(f"default of {mine.name}: {mine.default} != {real_param.default}")
            if mine.annotation and real_param.annotation and mine.annotation != real_param.annotation:
                out.append(f"annotation of {mine.name}: {mine.annotation} != {real_param.annotation}")
    if stand_in.returns and real.returns and stand_in.returns != real.returns:
        out.append(f"return type {stand_in.returns} != {real.returns}")
    return out


def compare_class(stand_in: SourceTree, stand_in_path: str, real: SourceTree, real_path: str, name: str,
                  label: str, also: tuple[str, ...] = ()) -> dict[str, str]:
    """``{qualified name: error}`` for each public method of the stand-in's class (and those named in ``also``, such
    as ``__init__``) that the real class lacks or spells differently (the real class may have more: a stand-in
    covers what the product calls)."""
    errors: dict[str, str] = {}
    mine = {k: v for k, v in stand_in.members(stand_in_path, name).items() if public(k) or k in also}
    theirs = real.members(real_path, name)
    for method, sig in sorted(mine.items()):
        qualified = f"{label}.{name}.{method}"
        if method not in theirs:
            errors[qualified] = (f"{qualified}: the real package has no such method\n"
                                 f"  stand-in: {sig.text()}  ({sig.where})")
            continue
        diff = differences(sig, theirs[method])
        if diff:
            real_sig = theirs[method]
            errors[qualified] = (f"{qualified}: {'; '.join(diff)}\n  stand-in: {sig.text()}  ({sig.where})\n"
                                 f"  real:     {real_sig.text()}  ({real_sig.where})")
    real_attributes = real.attributes(real_path, name)
    for attribute in sorted(a for a in stand_in.attributes(stand_in_path, name) if public(a)):
        if attribute not in real_attributes:
            errors[f"{label}.{name}.{attribute}"] = f"{label}.{name}.{attribute}: the real class has no such attribute"
    return errors


def judge(errors: dict[str, str], allowlist: dict[str, str]) -> list[str]:
    """The errors not allowlisted, and the allowlisted names that no longer differ (a stale entry)."""
    out = [text for name, text in sorted(errors.items()) if name not in allowlist]
    out += [f"{name} is allowlisted ({why}) but agrees with the real package now: remove it from the allowlist"
            for name, why in sorted(allowlist.items()) if name not in errors]
    return out
