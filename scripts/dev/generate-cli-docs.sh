#!/usr/bin/env bash
# Regenerates the tether CLI's man page and shell completions from its command tree (swift-argument-parser's
# --generate-completion-script and its generate-manual tool), plus the command-tree dump they come from, and
# writes them where they are committed:
#   docs/man/tether.1               man page (mdoc)
#   docs/man/tether.help.json       `tether --experimental-dump-help`; TetherCLITests checks it is current
#   deploy/completions/tether.bash, deploy/completions/_tether (zsh), deploy/completions/tether.fish
# With --check it writes into a temporary directory instead and exits 1 if a committed copy differs.
# Run it after changing any command, option or help text; `swift test --filter GeneratedDocs` tells if you forgot.
set -euo pipefail
cd "$(dirname "$0")/../.."
check=false
[ "${1:-}" = "--check" ] && check=true
scratch=(${TETHER_SCRATCH_PATH:+--scratch-path "$TETHER_SCRATCH_PATH"})
# The manual's date is fixed so regenerating is reproducible; change it when the command tree changes.
manual_date=2026-11-28

swift build "${scratch[@]}" --product tether >/dev/null
swift build "${scratch[@]}" --product generate-manual >/dev/null
bin=$(swift build "${scratch[@]}" --show-bin-path)

out=.
if $check; then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out/docs/man" "$out/deploy/completions"
"$bin/generate-manual" "$bin/tether" --output-directory "$out/docs/man" --date "$manual_date" >/dev/null
"$bin/tether" --experimental-dump-help | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), indent=1, sort_keys=True))' \
    >"$out/docs/man/tether.help.json"
"$bin/tether" --generate-completion-script bash >"$out/deploy/completions/tether.bash"
"$bin/tether" --generate-completion-script zsh >"$out/deploy/completions/_tether"
"$bin/tether" --generate-completion-script fish >"$out/deploy/completions/tether.fish"

if $check; then
    status=0
    for file in docs/man/tether.1 docs/man/tether.help.json deploy/completions/tether.bash deploy/completions/_tether \
        deploy/completions/tether.fish; do
        if ! cmp -s "$file" "$out/$file"; then
            echo "generate-cli-docs: $file is out of date; run scripts/dev/generate-cli-docs.sh and commit the result" >&2
            status=1
        fi
    done
    exit $status
fi
echo "generate-cli-docs: wrote docs/man/tether.1, docs/man/tether.help.json and deploy/completions/"
