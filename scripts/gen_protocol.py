#!/usr/bin/env python3
"""Generates the broker's per-API protocol data from Kafka's message definitions.

The API table (`served_apis!` in crates/protocol/src/apis.rs) is where an API is
declared: each row starts `Name min..=max, NameRequest,`. For every row, this reads Kafka's
`common/message/NameRequest.json` and `NameResponse.json` out of the kafka-clients jar and
writes:

* the request's schema, for the frame checks (crates/protocol/src/frame_shape/generated/): each
  field's kind and the versions it is present, nullable and tagged in, as Kafka writes them,
  leaving out the fields absent at every served version;
* the response's `ErrorCodes` impl (crates/protocol/src/error_codes/generated.rs, and
  generated_rest.rs for the second half of the table): every `int16`
  field named `ErrorCode` or `PartitionErrorCode`, through arrays and structs, present at a
  served version and in the codec's (`kafka-protocol`) struct. A path the codec lacks is left
  out, with a note;
* the response's `ThrottleTime` impl (crates/protocol/src/throttle_time/generated.rs): its
  top-level `ThrottleTimeMs`, from the first version that carries it.

It fails on what the frame checks cannot express at a served version (a kind they lack, a
struct nullable at some served versions only), and when Kafka's flexible versions disagree with the codec's
request header versions, from which the frame checks tell a flexible version.

    python3 scripts/gen_protocol.py [--jar PATH]           write the files
    python3 scripts/gen_protocol.py --check [--jar PATH]   exit 1 with a diff if they differ

The jar defaults to the first target/kafka/libs/kafka-clients-*.jar (scripts/kafka.sh install
puts it there). The output is formatted with rustfmt.
"""

import argparse
import difflib
import glob
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APIS = os.path.join("crates", "protocol", "src", "apis.rs")
SCHEMAS_DIR = os.path.join("crates", "protocol", "src", "frame_shape", "generated")
ERROR_CODES = os.path.join("crates", "protocol", "src", "error_codes", "generated.rs")
# The impls of the second half of the API table: one file would pass the size limit.
ERROR_CODES_REST = os.path.join("crates", "protocol", "src", "error_codes", "generated_rest.rs")
THROTTLE_TIMES = os.path.join("crates", "protocol", "src", "throttle_time", "generated.rs")
OWN_MESSAGES_DIR = os.path.join("crates", "protocol", "src", "messages")
MAX_FILE_LINES = 600

# A row of the API table: `Name min..=max, NameRequest,` (what follows may change).
ROW = re.compile(r"^\s*([A-Z]\w*)\s+(\d+)\.\.=(\d+),\s*(\w+)Request\s*,")

MAX = 32767  # "N+" in Kafka's version ranges; written `MAX` in Rust.
PRIMITIVES = {
    "bool": "Bool",
    "int8": "Int8",
    "int16": "Int16",
    "int32": "Int32",
    "int64": "Int64",
    "uint16": "Uint16",
    "float64": "Float64",
    "uuid": "Uuid",
    "string": "String",
    "bytes": "Bytes",
    "records": "Records",
}
ERROR_CODE_FIELDS = {"ErrorCode", "PartitionErrorCode"}


class Failure(Exception):
    pass


def is_struct(kind):
    """Whether a type (an array's element type) names a struct: Kafka's primitive types
    (those above, and any the frame checks lack) are lower
    case, structs CamelCase."""
    return kind[:1].isupper()


# Version ranges.


def parse_versions(text, where):
    """Kafka's "N+", "N-M", "N" or "none", as (min, max), or None for none."""
    text = (text or "none").strip()
    if text == "none":
        return None
    match = re.fullmatch(r"(\d+)(\+|-(\d+))?", text)
    if not match:
        raise Failure(f"{where}: version range {text!r} is not understood")
    low = int(match.group(1))
    if match.group(2) == "+":
        return (low, MAX)
    high = int(match.group(3)) if match.group(3) else low
    return (low, high)


def intersect(a, b):
    if a is None or b is None:
        return None
    low, high = max(a[0], b[0]), min(a[1], b[1])
    return (low, high) if low <= high else None


def covers(outer, inner):
    return inner is None or (outer is not None and outer[0] <= inner[0] and inner[1] <= outer[1])


def rust_versions(versions):
    low, high = versions
    return f"v({low}, {'MAX' if high == MAX else high})"


# Names.


def snake(name):
    """A CamelCase name in snake_case, as the codec names fields and files."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return name.lower()


def served_range_text(low, high):
    return f"v{low}" if low == high else f"v{low}\u2013{high}"


# Inputs.


def find_jar(explicit):
    if explicit:
        if not os.path.isfile(explicit):
            raise Failure(f"no jar at {explicit}")
        return explicit
    found = sorted(glob.glob(os.path.join(ROOT, "target", "kafka", "libs", "kafka-clients-*.jar")))
    if not found:
        raise Failure(
            "no target/kafka/libs/kafka-clients-*.jar (scripts/kafka.sh install puts it there); "
            "or pass --jar PATH"
        )
    return found[0]


def load_definitions(jar):
    """Every `common/message/*.json` of the jar, by message name, its `//` lines left out."""
    definitions = {}
    with zipfile.ZipFile(jar) as archive:
        for entry in archive.namelist():
            match = re.fullmatch(r"common/message/(\w+)\.json", entry)
            if not match:
                continue
            text = archive.read(entry).decode("utf-8")
            kept = [line for line in text.split("\n") if not line.lstrip().startswith("//")]
            definitions[match.group(1)] = json.loads("\n".join(kept))
    if not definitions:
        raise Failure(f"{jar} holds no common/message/*.json")
    return definitions


def served_apis():
    """The API table's rows: (name, min, max, request type name without `Request`)."""
    rows = []
    with open(os.path.join(ROOT, APIS), encoding="utf-8") as file:
        for line in file:
            match = ROW.match(line)
            if match:
                name, low, high, message = match.groups()
                rows.append((name, int(low), int(high), message))
    if not rows:
        raise Failure(f"{APIS}: no rows of the form `Name min..=max, NameRequest,`")
    return rows


def codec_messages_dir():
    """The codec's generated message sources, at the version Cargo.lock pins."""
    with open(os.path.join(ROOT, "Cargo.lock"), encoding="utf-8") as file:
        lock = file.read()
    match = re.search(r'name = "kafka-protocol"\nversion = "([^"]+)"', lock)
    if not match:
        raise Failure("Cargo.lock pins no kafka-protocol")
    version = match.group(1)
    cargo_home = os.environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")
    pattern = os.path.join(cargo_home, "registry", "src", "*", f"kafka-protocol-{version}")
    found = sorted(glob.glob(pattern))
    if not found:
        # Not unpacked yet: cargo fetches it and says where it is.
        metadata = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            cwd=ROOT, check=True, capture_output=True, text=True,
        )
        for package in json.loads(metadata.stdout)["packages"]:
            if package["name"] == "kafka-protocol" and package["version"] == version:
                found = [os.path.dirname(package["manifest_path"])]
    if not found:
        raise Failure(f"the source of kafka-protocol {version} is nowhere to be found")
    return os.path.join(found[0], "src", "messages")


# The codec's structs.


STRUCT = re.compile(r"^pub struct (\w+) \{\n(.*?)^\}", re.M | re.S)
FIELD = re.compile(r"^    pub (\w+): (.+),$", re.M)


def own_codec_dir(message):
    """The directory of a codec generated by scripts/gen_messages.py for `message`, if any."""
    path = os.path.join(ROOT, OWN_MESSAGES_DIR, snake(message))
    return path if os.path.isdir(path) else None


def codec_structs(messages_dir, message):
    """The structs of the codec's module for `message` (the codec crate's, or one generated by
    scripts/gen_messages.py for an API the crate lacks): name -> {field: Rust type}."""
    own = own_codec_dir(message)
    if own:
        paths = sorted(glob.glob(os.path.join(own, "*.rs")))
    else:
        paths = [os.path.join(messages_dir, snake(message) + ".rs")]
    if not all(os.path.isfile(path) for path in paths):
        raise Failure(f"the codec has no {paths[0]}")
    text = ""
    for path in paths:
        with open(path, encoding="utf-8") as file:
            text += file.read()
    return {name: dict(FIELD.findall(body)) for name, body in STRUCT.findall(text)}, text


def codec_flexible_from(text, message):
    """The first version in which the codec's `message` uses request header 2 (None: never)."""
    match = re.search(
        r"impl HeaderVersion for " + message + r" \{\s*fn header_version\(_?version: i16\) -> i16 \{"
        r"\s*(?:if version >= (\d+) \{\s*2\s*\} else \{\s*1\s*\}|(\d))\s*\}",
        text,
    )
    if not match:
        raise Failure(f"the codec's {message} header version is not understood")
    if match.group(1):
        return int(match.group(1))
    return 0 if int(match.group(2)) >= 2 else None


# Request schemas.


def struct_fields(field, definition, where):
    """The fields of a struct-typed field: its own, or those of the common struct it names."""
    if "fields" in field:
        return field["fields"]
    name = field["type"].removeprefix("[]")
    for common in definition.get("commonStructs", []):
        if common["name"] == name:
            return common["fields"]
    raise Failure(f"{where}: struct type {name} is defined nowhere")


def schema_fields(fields, definition, present, where):
    """Rust `Field` expressions for `fields`, present at `present` (the served versions within
    their parent's): those absent from it are left out."""
    out = []
    for field in fields:
        name = field["name"]
        here = f"{where}.{name}"
        if "flexibleVersions" in field:
            raise Failure(f"{here}: a field's own flexibleVersions is not supported")
        versions = parse_versions(field.get("versions"), here)
        live = intersect(versions, present)
        if live is None:
            continue
        kind = schema_kind(field, definition, live, here)
        expression = f'Field::new("{name}", {kind}, {rust_versions(versions)})'
        nullable = parse_versions(field.get("nullableVersions"), here)
        if intersect(nullable, live):
            expression += f".nullable({rust_versions(nullable)})"
        tagged = parse_versions(field.get("taggedVersions"), here)
        if intersect(tagged, live):
            expression += f".tagged({int(field['tag'])}, {rust_versions(tagged)})"
        out.append(expression)
    return out


def schema_kind(field, definition, live, where):
    kind = field["type"]
    if kind.startswith("[]"):
        element = kind[2:]
        if element in PRIMITIVES:
            return f"Kind::PrimitiveArray(&Kind::{PRIMITIVES[element]})"
        if not is_struct(element):
            raise Failure(f"{where}: the frame checks have no kind for an array of {element}")
        inner = schema_fields(struct_fields(field, definition, where), definition, live, where)
        return f"Kind::Array(&[{', '.join(inner)}])"
    if kind in PRIMITIVES:
        return f"Kind::{PRIMITIVES[kind]}"
    if not is_struct(kind):
        raise Failure(f"{where}: the frame checks have no kind for {kind}")
    # A single struct: with a null marker where it may be null, without one where it may not;
    # one that is nullable at some served versions only has no kind.
    nullable = parse_versions(field.get("nullableVersions"), where)
    inner = schema_fields(struct_fields(field, definition, where), definition, live, where)
    if covers(nullable, live):
        return f"Kind::NullableStruct(&[{', '.join(inner)}])"
    if intersect(nullable, live) is None:
        return f"Kind::Struct(&[{', '.join(inner)}])"
    raise Failure(
        f"{where}: a struct nullable at some of v{live[0]}-{live[1]} only: "
        "the frame checks have no kind for it"
    )


def schema_file(api, low, high, message, definition, header):
    """The Rust source of one request's schema, and the name of its constant."""
    request = message + "Request"
    if definition.get("type") != "request":
        raise Failure(f"{request}.json is not a request")
    valid = parse_versions(definition.get("validVersions"), request)
    if not covers(valid, (low, high)):
        raise Failure(f"{api} serves v{low}-{high}, outside {request}'s valid versions")
    fields = schema_fields(definition["fields"], definition, (low, high), request)
    constant = snake(api).upper()
    body = (
        f"/// {request} {served_range_text(low, high)}.\n"
        f"pub(super) const {constant}: Message = Message {{ api_key: {int(definition['apiKey'])}, "
        f"fields: &[{', '.join(fields)}] }};\n"
    )
    used = [name for name in ("Field", "Kind", "MAX", "Message", "v")
            if re.search(r"\b" + name + r"\b", body.split("\n", 1)[1])]
    source = header + f"use crate::frame_shape::{{{', '.join(used)}}};\n\n" + body
    return source, constant


def check_flexible(message, definition, codec_text, low, high):
    """Kafka's flexible versions must be the codec's: the frame checks take them from it."""
    request = message + "Request"
    flexible = parse_versions(definition.get("flexibleVersions"), request)
    from_codec = codec_flexible_from(codec_text, request)
    for version in range(low, high + 1):
        kafka = flexible is not None and flexible[0] <= version <= flexible[1]
        codec = from_codec is not None and version >= from_codec
        if kafka != codec:
            raise Failure(
                f"{request} v{version}: Kafka says {'' if kafka else 'not '}flexible, "
                f"the codec's request header says {'' if codec else 'not '}flexible"
            )


# Error codes.


def error_code_paths(fields, definition, present, structs, struct, where, notes):
    """What to walk for the error codes of `fields` (the codec's `struct`): a list of
    ("code", rust_name) and ("walk", rust_name, how, inner), in field order."""
    out = []
    for field in fields:
        name = field["name"]
        here = f"{where}.{name}"
        live = intersect(parse_versions(field.get("versions"), here), present)
        if live is None:
            continue
        rust = snake(name)
        kind = field["type"]
        if name in ERROR_CODE_FIELDS and kind == "int16":
            if rust not in structs[struct]:
                notes.append(f"{here}: the codec's {struct} has no {rust}; left out")
                continue
            if structs[struct][rust] != "i16":
                raise Failure(f"{here}: the codec's {struct}.{rust} is not an i16")
            out.append(("code", rust))
            continue
        if not is_struct(kind.removeprefix("[]")):
            continue
        inner_struct, how = codec_struct_of(structs, struct, rust)
        inner_fields = struct_fields(field, definition, here)
        if inner_struct is None:
            if has_error_code(inner_fields, definition, live, here):
                notes.append(f"{here}: the codec's {struct} has no {rust}; left out")
            continue
        inner = error_code_paths(
            inner_fields, definition, live, structs, inner_struct, here, notes
        )
        if inner:
            out.append(("walk", rust, how, inner))
    return out


def has_error_code(fields, definition, present, where):
    for field in fields:
        here = f"{where}.{field['name']}"
        live = intersect(parse_versions(field.get("versions"), here), present)
        if live is None:
            continue
        if field["name"] in ERROR_CODE_FIELDS and field["type"] == "int16":
            return True
        if is_struct(field["type"].removeprefix("[]")):
            if has_error_code(struct_fields(field, definition, here), definition, live, here):
                return True
    return False


def codec_struct_of(structs, struct, rust):
    """The codec struct a field of `struct` holds, and how: `vec`, `opt_vec`, `opt` or
    `plain`; (None, None) when the codec's struct has no such field."""
    kind = structs[struct].get(rust)
    if kind is None:
        return None, None
    for pattern, how in (
        (r"Vec<(\w+)>", "vec"),
        (r"Option<Vec<(\w+)>>", "opt_vec"),
        (r"Option<(\w+)>", "opt"),
        (r"(\w+)", "plain"),
    ):
        match = re.fullmatch(pattern, kind)
        if match and match.group(1) in structs:
            return match.group(1), how
    raise Failure(f"the codec's {struct}.{rust} is a {kind}, not a struct or array of them")


def singular(word):
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word + "_entry"


def loop_variable(field, taken):
    """A name for an element of `field`: `topics` -> `topic`, `results_by_partition` ->
    `partition_result`."""
    if "_by_" in field:
        head, tail = field.split("_by_", 1)
        name = tail.split("_")[0] + "_" + singular(head)
    else:
        name = singular(field)
    while name in taken:
        name += "_"
    return name


def walk_statements(paths, owner, taken):
    statements = []
    for path in paths:
        if path[0] == "code":
            statements.append(f"codes.push({owner}.{path[1]});")
            continue
        _, rust, how, inner = path
        access = f"{owner}.{rust}"
        if how == "plain":
            statements += walk_statements(inner, access, taken)
            continue
        variable = loop_variable(rust, taken)
        body = " ".join(walk_statements(inner, variable, taken | {variable}))
        if how == "vec":
            statements.append(f"for {variable} in &{access} {{ {body} }}")
        elif how == "opt_vec":
            statements.append(f"for {variable} in {access}.iter().flatten() {{ {body} }}")
        else:
            statements.append(f"if let Some({variable}) = &{access} {{ {body} }}")
    return statements


def error_codes_impl(response, paths):
    statements = walk_statements(paths, "self", {"codes"})
    leading = []
    while statements and statements[0].startswith("codes.push("):
        leading.append(statements.pop(0)[len("codes.push("):-2])
    if not statements:
        body = f"vec![{', '.join(leading)}]"
    else:
        start = f"vec![{', '.join(leading)}]" if leading else "Vec::new()"
        body = f"let mut codes = {start}; {' '.join(statements)} codes"
    return (
        f"impl ErrorCodes for {response} {{ fn error_codes(&self) -> Vec<i16> {{ {body} }} }}\n"
    )


# Output.


def header(jar, what):
    return (
        "// @generated by scripts/gen_protocol.py from Kafka's message definitions\n"
        f"// (common/message/*.json in {os.path.basename(jar)}) and the API table\n"
        "// (crates/protocol/src/apis.rs). Do not edit by hand: change the table and run\n"
        "// `python3 scripts/gen_protocol.py`.\n\n"
        + "".join(f"//! {line}\n" for line in textwrap.wrap(what, 96))
        + "\n"
    )


def rustfmt(source, path):
    done = subprocess.run(
        ["rustfmt", "--edition", "2024", "--emit", "stdout"],
        input=source, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise Failure(f"rustfmt refused the source of {path}:\n{done.stderr}\n{source}")
    lines = done.stdout.count("\n")
    if lines > MAX_FILE_LINES:
        raise Failure(f"{path} would have {lines} lines (at most {MAX_FILE_LINES})")
    return done.stdout


def generate(jar):
    """Every generated file: path (from the repository's root) -> its formatted source."""
    definitions = load_definitions(jar)
    messages_dir = codec_messages_dir()
    rows = served_apis()
    files, modules, responses, throttles, notes = {}, [], [], [], []
    for api, low, high, message in rows:
        for suffix in ("Request", "Response"):
            if message + suffix not in definitions:
                raise Failure(f"{os.path.basename(jar)} has no {message}{suffix}.json")
        request, response = definitions[message + "Request"], definitions[message + "Response"]
        _, request_codec = codec_structs(messages_dir, message + "Request")
        check_flexible(message, request, request_codec, low, high)
        module = snake(api)
        source, constant = schema_file(
            api, low, high, message, request,
            header(jar, f"The request schema of {api}, at the versions the broker serves."),
        )
        files[os.path.join(SCHEMAS_DIR, module + ".rs")] = source
        modules.append((module, constant))
        structs, _ = codec_structs(messages_dir, message + "Response")
        root = message + "Response"
        if root not in structs:
            raise Failure(f"the codec has no struct {root}")
        paths = error_code_paths(
            response["fields"], response, (low, high), structs, root, root, notes
        )
        responses.append((root, paths))
        throttles.append((root, throttle_from(response, (low, high), root)))
    files[os.path.join(SCHEMAS_DIR, "mod.rs")] = schemas_index(jar, modules)
    half = len(responses) // 2
    files[ERROR_CODES] = error_codes_file(jar, responses[:half])
    files[ERROR_CODES_REST] = error_codes_file(jar, responses[half:])
    files[THROTTLE_TIMES] = throttle_times_file(jar, throttles)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return {path: rustfmt(source, path) for path, source in files.items()}


def throttle_from(response, served, where):
    """The first served version whose response carries a top-level `ThrottleTimeMs`, or None."""
    for field in response["fields"]:
        if field["name"] == "ThrottleTimeMs":
            present = intersect(parse_versions(field.get("versions"), where), served)
            return present[0] if present else None
    return None


def throttle_times_file(jar, throttles):
    names = ", ".join(sorted(r for r, _ in throttles if not own_codec_dir(r)))
    own = ", ".join(sorted(r for r, _ in throttles if own_codec_dir(r)))
    own_use = f"use crate::messages::{{{own}}};\n" if own else ""
    rows = "".join(
        f"    {response} => {'none' if since is None else since},\n" for response, since in throttles
    )
    return (
        header(
            jar,
            "The throttle time of every served API's response: the first version whose schema "
            "carries a top-level `ThrottleTimeMs` (`none`: no version does).",
        )
        + f"use kafka_protocol::messages::{{{names}}};\n\n{own_use}\n"
        + f"throttle_times! {{\n{rows}}}\n"
    )


def schemas_index(jar, modules):
    declarations = "".join(f"mod {module};\n" for module, _ in modules)
    entries = ", ".join(f"&{module}::{constant}" for module, constant in modules)
    return (
        header(jar, "The request schemas of the APIs the broker serves, one module each.")
        + declarations
        + "\nuse super::Message;\n\n/// Every message the broker serves, in the API table's order.\n"
        + f"pub(super) const ALL: &[&Message] = &[{entries}];\n"
    )


def error_codes_file(jar, responses):
    names = ", ".join(sorted(r for r, _ in responses if not own_codec_dir(r)))
    own = ", ".join(sorted(r for r, _ in responses if own_codec_dir(r)))
    own_use = f"use crate::messages::{{{own}}};\n" if own else ""
    impls = "\n".join(error_codes_impl(response, paths) for response, paths in responses)
    return (
        header(
            jar,
            "The error codes of every served API's response: each `ErrorCode` and "
            "`PartitionErrorCode` at the served versions, in the order of Kafka's definition "
            "(`NONE` included).",
        )
        + f"use kafka_protocol::messages::{{{names}}};\n\nuse super::ErrorCodes;\n{own_use}\n"
        + impls
    )


def written(paths):
    """The generated files now in the tree (those of the schema directory, and the impls)."""
    found = set()
    directory = os.path.join(ROOT, SCHEMAS_DIR)
    if os.path.isdir(directory):
        found |= {os.path.join(SCHEMAS_DIR, name) for name in os.listdir(directory)
                  if name.endswith(".rs")}
    for generated in (ERROR_CODES, ERROR_CODES_REST, THROTTLE_TIMES):
        if os.path.isfile(os.path.join(ROOT, generated)):
            found.add(generated)
    return found | set(paths)


def read(path):
    full = os.path.join(ROOT, path)
    if not os.path.isfile(full):
        return None
    with open(full, encoding="utf-8") as file:
        return file.read()


def check(files):
    differing = 0
    for path in sorted(written(files)):
        old, new = read(path), files.get(path)
        if old == new:
            continue
        differing += 1
        if new is None:
            print(f"{path}: not generated (it would be removed)")
        sys.stdout.writelines(difflib.unified_diff(
            (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True),
            fromfile=f"a/{path}" if old is not None else "/dev/null",
            tofile=f"b/{path}" if new is not None else "/dev/null",
        ))
    if differing:
        print(f"{differing} generated files differ from what scripts/gen_protocol.py generates; "
              "run it and commit the result", file=sys.stderr)
        return 1
    print(f"the {len(files)} generated protocol files are up to date")
    return 0


def write(files):
    for path in sorted(written(files)):
        full = os.path.join(ROOT, path)
        if path not in files:
            os.remove(full)
            print(f"removed {path}")
        elif read(path) != files[path]:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as file:
                file.write(files[path])
            print(f"wrote {path}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jar", help="the kafka-clients jar (default: target/kafka/libs/)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 with a diff if the checked-in files differ")
    arguments = parser.parse_args()
    try:
        files = generate(find_jar(arguments.jar))
    except (Failure, subprocess.CalledProcessError, OSError) as error:
        print(f"gen_protocol: {error}", file=sys.stderr)
        return 1
    return check(files) if arguments.check else write(files)


if __name__ == "__main__":
    sys.exit(main())
