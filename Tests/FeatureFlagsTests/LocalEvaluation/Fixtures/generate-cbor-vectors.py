#!/usr/bin/env python3
"""Writes cbor-fractional-vectors.json: expectations for FractionalBucketing.cbor, computed once
by the reference evaluator openfeature-flagd-core 2.0.0 (PyPI), which implements flagd's accepted
ADR "fractional-non-string-rand-units". The Swift tests read the JSON; they never run Python.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install openfeature-flagd-core==2.0.0
    /tmp/v/bin/python generate-cbor-vectors.py TESTKIT_FLAGS_JSON > cbor-fractional-vectors.json

TESTKIT_FLAGS_JSON is open-feature/flagd-testbed's evaluator/flags/testkit-flags.json (Apache-2.0);
its fractional flags are copied into the output with their definitions.
"""
import json
import random
import sys

import cbor2
import mmh3
from openfeature.contrib.tools.flagd.core import FlagdCore
from openfeature.contrib.tools.flagd.core.targeting.custom_ops import normalize_numbers
from openfeature.evaluation_context import EvaluationContext

random.seed(20261124)

# 1. Encodings and hashes of single values (after the ADR's number normalisation).
values = [
    "", "a", "user-1", "héllo wörld", "x" * 23, "y" * 24, "z" * 300,
    0, 1, 23, 24, 255, 256, 65535, 65536, 4294967295, 4294967296, -1, -24, -25, -256, -257, -65537,
    9007199254740991, -9007199254740991, 9223372036854775807, -9223372036854775808, 18446744073709551615,
    0.0, -0.0, 1.0, 2.0, 1e6, 1.5, -1.5, 0.1, 2.5, 100000.5, 3.4028234663852886e38, 1e300, -1e-300,
    5.960464477539063e-08, 6.103515625e-05, 1.0e19, 1.8446744073709552e19, 1.0e20,
    True, False, None,
    [], [1, 2.5, "a"], ["flag", "user-1"],
    {}, {"b": 1, "a": [1, 2.5, None, True], "aa": "x"}, {"nested": {"z": 1, "y": {"x": [1.0, 2.5]}}},
]
encodings = []
for value in values:
    normalised = normalize_numbers(value)
    data = cbor2.dumps(normalised, canonical=True)
    encodings.append({"value": value, "cbor": data.hex(), "murmur3": mmh3.hash(data, signed=False)})

# 2. Fractional flags: our own shapes, and the test bed's fractional flags.
flags = {
    "cbor-by-var": {"state": "ENABLED", "variants": {"a": "a", "b": "b", "c": "c", "d": "d", "fallback": "fallback"},
        "defaultVariant": "fallback",
        "targeting": {"fractional": [{"var": "unit"}, ["a", 25], ["b", 25], ["c", 25], ["d", 25]]}},
    "cbor-shorthand": {"state": "ENABLED", "variants": {"heads": "heads", "tails": "tails", "fallback": "fallback"},
        "defaultVariant": "fallback", "targeting": {"fractional": [["heads", 50], ["tails", 50]]}},
    "cbor-cat": {"state": "ENABLED", "variants": {"x": "x", "y": "y", "z": "z", "fallback": "fallback"},
        "defaultVariant": "fallback",
        "targeting": {"fractional": [{"cat": [{"var": "$flagd.flagKey"}, {"var": "unit"}]}, ["x", 1], ["y", 2], ["z", 7]]}},
    "cbor-uneven": {"state": "ENABLED", "variants": {"rare": "rare", "common": "common", "fallback": "fallback"},
        "defaultVariant": "fallback",
        "targeting": {"fractional": [{"var": "unit"}, ["rare", 1], ["common", 2147483646]]}},
}
testkit = json.load(open(sys.argv[1])) if len(sys.argv) > 1 else {"flags": {}}
for key, flag in testkit["flags"].items():
    if "fractional" in json.dumps(flag.get("targeting", {})):
        flags[key] = flag
evaluators = testkit.get("$evaluators", {})

def random_unit():
    kind = random.choice(["string", "int", "float", "bool", "object", "negative", "big"])
    if kind == "string":
        return "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789-_é") for _ in range(random.randint(0, 20)))
    if kind == "int":
        return random.randint(0, 10**6)
    if kind == "negative":
        return -random.randint(1, 10**12)
    if kind == "big":
        # (2**64 - 1 and beyond are left out: past the 64-bit signed range a JSON integer has
        # no integer form in Swift's FlagValue, so no app can pass one.)
        return random.choice([2**53 - 1, 2**63 - 1, -(2**63), 1e20, 1.5e19])
    if kind == "float":
        return random.choice([0.5, 1.25, 3.14159, -2.75, 1e-7, 12345.678, 1.0, 2.0, 100.0])
    if kind == "bool":
        return random.choice([True, False])
    return {"id": random.randint(0, 1000), "plan": random.choice(["a", "b"]), "tags": [1, "x", 2.5]}

contexts = []
for i in range(40):
    attributes = {"unit": random_unit(), "user": {"name": random.choice(["alice", "bob", "carol", "dave", 42])},
                  "email": random.choice(["a@b.c", "ballmer@macrosoft.com"]), "tier": random.choice(["premium", "basic"]),
                  "color": random.choice(["red", "green"]), "locale": random.choice(["us", "uk"]), "age": random.randint(1, 99),
                  "version": random.choice(["1.0.0", "2.1.0"])}
    key = random.choice([f"user-{i}", "", None, f"u{random.randint(0, 10**9)}"])
    contexts.append({"targetingKey": key, "attributes": attributes})
# Edge contexts: the unit missing or null. (`user.name` stays present: the reference's JsonLogic
# prints a missing value in `cat` as "None", where flagd's Go evaluator and JavaScript print "".)
contexts.append({"targetingKey": "edge-1", "attributes": {"user": {"name": "edge"}}})
contexts.append({"targetingKey": "edge-2", "attributes": {"unit": None, "user": {"name": "edge"}}})

core = FlagdCore()
core.set_flags(json.dumps({"flags": flags, "$evaluators": evaluators}))
results = []
for key, flag in flags.items():
    for index, context in enumerate(contexts):
        ctx = EvaluationContext(targeting_key=context["targetingKey"], attributes=context["attributes"])
        default = flag["variants"][next(iter(flag["variants"]))]
        kind = type(default).__name__
        resolve = {"str": core.resolve_string_value, "bool": core.resolve_boolean_value, "int": core.resolve_integer_value,
                   "float": core.resolve_float_value}.get(kind, core.resolve_object_value)
        details = resolve(key, default, ctx)
        results.append({"flag": key, "context": index, "variant": details.variant, "reason": str(details.reason.value if hasattr(details.reason, "value") else details.reason),
                        "value": details.value})

json.dump({
    "source": "openfeature-flagd-core 2.0.0 (PyPI), canonical cbor2 and mmh3; test bed flags from open-feature/flagd-testbed (Apache-2.0)",
    "encodings": encodings, "flags": flags, "evaluators": evaluators, "contexts": contexts, "results": results,
}, sys.stdout, indent=1, sort_keys=True)
print()
