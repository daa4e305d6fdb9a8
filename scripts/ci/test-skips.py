#!/usr/bin/env python3
"""Lists every test a `swift test` run skipped or cancelled, and under --strict fails on any not allowed.

    test-skips.py --events EVENTS.jsonl [--log OUTPUT.txt] [--allow ALLOWED.txt] [--strict]

EVENTS.jsonl is Swift Testing's event stream (`swift test --event-stream-output-path F --event-stream-version 0`).
It is read instead of the console output because the console hides a cancelled test *case*: a parameterized test
whose PostgreSQL case called `Test.cancel` prints "✔ Test ... passed" (swift-testing 6.3.1); the stream carries a
`testCaseCancelled` event for it. Skips come from `testSkipped` (`.enabled(if:)`, `.disabled`), cancellations from
`testCancelled` and `testCaseCancelled`. OUTPUT.txt (the console log) adds XCTest's `Test Case '...' skipped` lines.

Each skip is printed as one line, `<test id>` or `<test id> [<case>]`, followed by its reason; an allow-list line
(ALLOWED.txt, `#` comments) is that name exactly. A run whose stream has no `runEnded` event is an error: the list
would be incomplete. Exit 0: nothing unallowed (or not --strict); 1: unallowed skips under --strict, or no usable
stream."""
import argparse
import json
import re
import sys
from pathlib import Path


def test_name(payload):
    """`Module.Suite/test(_:)` without the `/File.swift:line:column` suffix, plus ` [case]` for a test case."""
    test_id = re.sub(r"/[^/]+\.swift:\d+:\d+$", "", payload.get("testID") or "?")
    case = payload.get("_testCase")
    return f"{test_id} [{case.get('displayName', '?')}]" if case else test_id


def reason(payload):
    texts = list(payload.get("_comments") or []) or [m.get("text", "") for m in payload.get("messages") or []]
    return "; ".join(t for t in texts if t) or "(no reason given)"


def skips_from_events(path):
    skips, run_ended, events = {}, False, 0
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise SystemExit(f"test-skips: {path}:{number}: not JSON ({error})")
        if record.get("kind") != "event":
            continue
        events += 1
        payload = record.get("payload") or {}
        kind = payload.get("kind")
        if kind == "runEnded":
            run_ended = True
        elif kind in ("testSkipped", "testCancelled", "testCaseCancelled"):
            name = test_name(payload)
            # A cancelled test that is not parameterized reports both testCancelled and testCaseCancelled.
            skips.setdefault(name, f"{'skipped' if kind == 'testSkipped' else 'cancelled'}: {reason(payload)}")
    return skips, run_ended, events


def skips_from_log(path):
    skips = {}
    for line in path.read_text(errors="replace").splitlines():
        match = re.match(r"^Test Case '([^']+)' skipped", line)
        if match:
            skips.setdefault(match.group(1), "skipped (XCTest)")
    return skips


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=Path, required=True)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--allow", type=Path)
    parser.add_argument("--strict", action="store_true")
    options = parser.parse_args()

    if not options.events.is_file():
        print(f"test-skips: no event stream at {options.events}: cannot tell which tests were skipped", file=sys.stderr)
        return 1
    skips, run_ended, events = skips_from_events(options.events)
    if not run_ended:
        print(f"test-skips: {options.events} has {events} events and no runEnded: the run did not finish, so the list "
              "of skips would be incomplete", file=sys.stderr)
        return 1
    if options.log and options.log.is_file():
        skips.update(skips_from_log(options.log))
    allowed = set()
    if options.allow and options.allow.is_file():
        allowed = {l.split("#", 1)[0].strip() for l in options.allow.read_text().splitlines()} - {""}

    unallowed = sorted(name for name in skips if name not in allowed)
    print(f"== skipped or cancelled tests: {len(skips)} ({len(skips) - len(unallowed)} allowed by "
          f"{options.allow or 'no allow-list'})")
    for name in sorted(skips):
        print(f"  {'allowed    ' if name in allowed else 'NOT ALLOWED' if options.strict else 'skipped    '} {name}: {skips[name]}")
    for name in sorted(allowed - set(skips)):
        print(f"  (allowed, but ran: {name}; remove it from the allow-list)")
    if unallowed and options.strict:
        print(f"test-skips: {len(unallowed)} test(s) skipped or cancelled and not in {options.allow}; CI fails on a "
              "silent skip. Fix the cause, or allow it by name with the reason in a comment.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
