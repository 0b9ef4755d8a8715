"""Server-side apply's documented field-ownership rules, over a CRD's own schema (no API server).

No API server installs on these machines, so the RayCluster's life between Pulumi and Ray's
autoscaler is checked against the rules as Kubernetes documents them, each one cited where it is
applied, and against the list types read from the real CRD (tests/schemas):

- [FM] https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management :
  an apply that sets a field owned by another manager to a different value is a conflict; a
  forced apply overrides the value and takes the ownership; "whenever a field's value does
  change, ownership moves from its current manager to the manager making the change" (an update,
  PUT or non-apply PATCH, always succeeds); two appliers setting the same value share it; a field
  an applier drops from its config and nobody else owns is removed from the live object or reset
  to its default.
- [MS] https://kubernetes.io/docs/reference/using-api/server-side-apply/#merge-strategy : a
  `listType: atomic` list is one field, replaced as a whole; `map` lists merge per element by
  their `x-kubernetes-list-map-keys`; `set` lists per scalar element. A list with no
  `x-kubernetes-list-type` is atomic (apiextensions JSONSchemaProps.XListType: "Defaults to
  atomic for arrays", k8s.io/apiextensions-apiserver pkg/apis/apiextensions/v1/types_jsonschema.go).
- [DF] https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#defaulting :
  a field absent from the object is set to its schema `default` on every write and read.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

# One step of a field path: ("f", name) a map key, ("k", ((key, value), ...)) a map-list element,
# ("v", value) a set element.
Step = tuple[str, Any]
Path = tuple[Step, ...]


class Conflict(Exception):
    """An apply that would change fields another manager owns, without force ([FM])."""

    def __init__(self, paths: set[Path], owners: set[str]) -> None:
        self.paths = paths
        self.owners = owners
        super().__init__(f"conflict with {sorted(owners)} over {sorted(map(render, paths))}")


def render(path: Path) -> str:
    """`.spec.workerGroupSpecs`-style, as the API server names fields in a conflict."""
    out = ""
    for kind, value in path:
        out += f".{value}" if kind == "f" else f"[{value}]"
    return out


def _list_type(schema: dict[str, Any]) -> str:
    return str(schema.get("x-kubernetes-list-type", "atomic"))  # [MS]


def _child(schema: dict[str, Any], key: str) -> dict[str, Any]:
    props = schema.get("properties")
    if props is not None and key in props:
        return dict(props[key])
    extra = schema.get("additionalProperties")
    return dict(extra) if isinstance(extra, dict) else {}


def flatten(value: Any, schema: dict[str, Any], path: Path = ()) -> dict[Path, Any]:
    """The object's fields as the ownership rules see them: maps recurse, atomic lists and
    scalars are single fields ([MS])."""
    if isinstance(value, dict) and value:
        out: dict[Path, Any] = {}
        for key, item in value.items():
            out |= flatten(item, _child(schema, key), (*path, ("f", key)))
        return out
    if isinstance(value, list) and value and _list_type(schema) != "atomic":
        items = dict(schema.get("items", {}))
        out = {}
        for element in value:
            if _list_type(schema) == "set":
                out[(*path, ("v", element))] = element
                continue
            keys = tuple((k, element.get(k)) for k in schema.get("x-kubernetes-list-map-keys", []))
            out |= flatten(element, items, (*path, ("k", keys)))
        return out
    return {path: copy.deepcopy(value)}


def unflatten(fields: dict[Path, Any]) -> Any:
    """The object those fields make (the inverse of `flatten`)."""
    if () in fields:
        return copy.deepcopy(fields[()])
    groups: dict[Step, dict[Path, Any]] = {}
    for path, value in fields.items():
        groups.setdefault(path[0], {})[path[1:]] = value
    if all(kind == "f" for kind, _ in groups):
        return {name: unflatten(sub) for (_, name), sub in groups.items()}
    return [unflatten(sub) for sub in groups.values()]


def with_defaults(value: Any, schema: dict[str, Any]) -> Any:
    """[DF]: every absent property with a schema default gets it, at every level present."""
    if isinstance(value, dict):
        out = {k: with_defaults(v, _child(schema, k)) for k, v in value.items()}
        for key, prop in schema.get("properties", {}).items():
            if key not in out and "default" in prop:
                out[key] = copy.deepcopy(prop["default"])
        return out
    if isinstance(value, list):
        return [with_defaults(v, dict(schema.get("items", {}))) for v in value]
    return value


@dataclass
class LiveObject:
    """One object on the API server: its fields and, per manager, the fields it owns."""

    schema: dict[str, Any]
    fields: dict[Path, Any] = field(default_factory=dict)
    managers: dict[str, set[Path]] = field(default_factory=dict)

    @property
    def object(self) -> Any:
        return with_defaults(unflatten(self.fields), self.schema)

    def _owners(self, path: Path, besides: str) -> set[str]:
        return {m for m, owned in self.managers.items() if m != besides and path in owned}

    def update(self, new_object: dict[str, Any], manager: str) -> None:
        """A PUT or non-apply PATCH (Ray's autoscaler's JSON patch): always succeeds; every field
        whose value changes moves to `manager` ([FM])."""
        new = flatten(with_defaults(new_object, self.schema), self.schema)
        old = flatten(self.object, self.schema)
        changed = {p for p in new.keys() | old.keys() if new.get(p) != old.get(p)}
        for owned in self.managers.values():
            owned -= changed
        self.managers.setdefault(manager, set()).update(p for p in changed if p in new)
        self.fields = new

    def apply(self, config: dict[str, Any], manager: str, *, force: bool = False) -> None:
        """A server-side apply of `config` by `manager` ([FM], [MS], [DF])."""
        applied = flatten(config, self.schema)
        live = flatten(self.object, self.schema)
        conflicts = {p for p, v in applied.items() if self._owners(p, manager) and live.get(p) != v}
        if conflicts and not force:
            owners = set().union(*(self._owners(p, manager) for p in conflicts))
            raise Conflict(conflicts, owners)
        for other, owned in self.managers.items():
            if other != manager:
                owned -= conflicts  # forced: the ownership is taken ([FM])
        dropped = {
            p
            for p in self.managers.get(manager, set()) - applied.keys()
            if not self._owners(p, manager)
        }
        merged = {p: v for p, v in live.items() if p not in dropped}
        # A field applied replaces whatever the live object held at or below it.
        for path in applied:
            merged = {
                p: v for p, v in merged.items() if p[: len(path)] != path and path[: len(p)] != p
            }
        merged |= applied
        self.fields = flatten(with_defaults(unflatten(merged), self.schema), self.schema)
        self.managers[manager] = set(applied)


def crd_schema(crd: dict[str, Any], version: str) -> dict[str, Any]:
    """The openAPIV3Schema of one served version of a CustomResourceDefinition."""
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return dict(served["schema"]["openAPIV3Schema"])
