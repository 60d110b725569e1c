"""Whether a JSON value fits a JSON schema, for the keywords tool parameters use.

llama-server's grammar already holds a constrained reply to its schema; this
checks the reply again, since the server may be another program, and a
reply cut short or hostile must not run a tool with arguments its schema
refuses. Keywords outside this list are not checked.
"""

from typing import Any, Final

JSON_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def of_type(value: object, name: str) -> bool:
    """Whether `value` is of the JSON type `name` (a boolean is no number)."""
    kinds = JSON_TYPES.get(name)
    if kinds is None:
        return True
    if isinstance(value, bool) and name != "boolean":
        return False
    return isinstance(value, kinds)


def value_error(value: object, schema: dict[str, Any], where: str) -> str | None:
    """Why `value` is not of the schema's type, const or enum; None when it is."""
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(of_type(value, name) for name in names):
            return f"{where} is not of type {'/'.join(map(str, names))}"
    if "const" in schema and value != schema["const"]:
        return f"{where} is not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} is not one of {schema['enum']!r}"
    if isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        return f"{where} is longer than {schema['maxLength']} characters"
    return None


def schema_error(value: object, schema: Any, where: str = "arguments") -> str | None:
    """Why `value` does not fit `schema`; None when it does."""
    if not isinstance(schema, dict):
        return None
    if error := value_error(value, schema, where):
        return error
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and all(
            schema_error(value, branch, where) for branch in branches
        ):
            return f"{where} fits none of its {keyword} branches"
    if isinstance(value, dict):
        return object_error(value, schema, where)
    if isinstance(value, list) and isinstance(items := schema.get("items"), dict):
        for index, item in enumerate(value):
            if error := schema_error(item, items, f"{where}[{index}]"):
                return error
    return None


def object_error(
    value: dict[str, Any], schema: dict[str, Any], where: str
) -> str | None:
    """Why the object does not fit the schema's properties; None when it does."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    for name in schema.get("required") or ():
        if name not in value:
            return f"{where} lacks {name!r}"
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            if error := schema_error(item, properties[name], f"{where}.{name}"):
                return error
        elif extra is False:
            return f"{where} has no property {name!r}"
        elif error := schema_error(item, extra, f"{where}.{name}"):
            return error
    return None
