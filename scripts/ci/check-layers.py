#!/usr/bin/env python3
"""Checks Package.swift's layering: what ships must not link what only stands in for the world.

Reads `swift package dump-package` (stdin) and follows every target's dependencies transitively. Fails when a
target under Sources/Core, Sources/Bus, Sources/Gateway or Sources/Backend (what tetherd, tether and tether-server
are built from) reaches a target under Sources/Simulation or Tests/, or when a Core target reaches anything but
Core (the cores are pure: no D-Bus, no database, no HTTP). Package products (GRDB, NIO, ...) are not followed.

    swift package dump-package | scripts/ci/check-layers.py
"""
import json
import sys

package = json.load(sys.stdin)
targets = {t["name"]: t for t in package["targets"]}


def path_of(name):
    target = targets[name]
    return target.get("path") or ("Tests/" + name if target["type"] == "test" else "Sources/" + name)


def layer(name):
    path = path_of(name)
    for prefix, layer_name in (("Sources/Core", "core"), ("Sources/Bus", "bus"), ("Sources/Gateway", "gateway"),
                               ("Sources/Backend", "backend"), ("Sources/Simulation", "simulation"),
                               ("Sources/Executables", "executable"), ("Tests/", "tests")):
        if path.startswith(prefix):
            return layer_name
    return "other"


def direct(name):
    result = []
    for dependency in targets[name].get("dependencies", []):
        for kind in ("byName", "target"):
            if kind in dependency:
                dep = dependency[kind][0]
                if dep in targets:
                    result.append(dep)
    return result


def closure(name):
    seen, stack, via = set(), [name], {name: None}
    while stack:
        current = stack.pop()
        for dep in direct(current):
            if dep not in seen:
                seen.add(dep)
                via[dep] = current
                stack.append(dep)
    return seen, via


def chain(via, end):
    names = [end]
    while via[names[-1]] is not None:
        names.append(via[names[-1]])
    return " -> ".join(reversed(names))


problems = []
for name in sorted(targets):
    mine = layer(name)
    if mine not in ("core", "bus", "gateway", "backend"):
        continue
    reached, via = closure(name)
    for dep in sorted(reached):
        theirs = layer(dep)
        if theirs in ("simulation", "tests", "executable"):
            problems.append(f"{name} ({mine}) links {dep} ({theirs}): {chain(via, dep)}")
        elif mine == "core" and theirs != "core":
            problems.append(f"{name} (core, pure) links {dep} ({theirs}): {chain(via, dep)}")

for problem in problems:
    print("layering:", problem, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"layering: {sum(1 for n in targets if layer(n) in ('core', 'bus', 'gateway', 'backend'))} product targets checked, none links simulation, tests or a higher layer's I/O into a core")
