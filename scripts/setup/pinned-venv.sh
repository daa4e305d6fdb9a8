# Sourced, not run: `pinned_venv` makes (once) a virtualenv holding PINNED PyPI packages, for the scripts that use a
# third-party Python program as a peer or an oracle (bleak, smpclient, smp, imgtool, schemathesis).
#
#   source "$ROOT/scripts/setup/pinned-venv.sh"
#   pinned_venv <who> <venv dir> <python check> <pip requirement>...
#
# The check is Python that exits 0 when the venv already holds the pinned versions; otherwise the venv is made afresh
# and the requirements installed. Progress goes to stderr, so that callers may print a path on stdout.
#
# Several tests make the same venv at once (swift test runs suites in parallel): two `python3 -m venv` on one
# directory break each other (ensurepip fails; seen in CI). So the check and the build run under an exclusive lock
# on <venv dir>.lock, and whoever waited finds the venv made and ready.
pinned_venv() {
    local who=$1 venv=$2 check=$3
    shift 3
    mkdir -p "$(dirname "$venv")"
    local lock
    exec {lock}>"$venv.lock"
    flock "$lock"
    if ! "$venv/bin/python" -c "$check" 2>/dev/null; then
        rm -rf "$venv"
        python3 -m venv "$venv" >&2 || {
            echo "$who: python3 -m venv $venv failed (python3-venv installed?)" >&2
            exec {lock}>&-
            return 1
        }
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2 || {
            rm -rf "$venv"
            echo "$who: could not install $* into $venv (PyPI reachable?)" >&2
            exec {lock}>&-
            return 1
        }
    fi
    exec {lock}>&-
}
