#!/usr/bin/env bash
# The README's quick start, exactly as a new user runs it: clone this repository into an empty folder
# (no ../shared beside it), make a fresh virtual environment and a fresh HOME (no ~/.asv-machine.json),
# then run the two commands. Fails if either fails. .ci/run runs it; usage: scripts/fresh_clone_check.sh [REPO]
# The second command's test suite runs the README's own-project commands as written, on a fresh temporary
# project (tests/test_readme_own_project.py), and every command the docs show (tests/test_docs.py).
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
work=$(mktemp -d /tmp/mmtrack-fresh.XXXXXX)
trap 'rm -rf "$work"' EXIT
python=${PYTHON:-python3}

git clone -q "$repo" "$work/mmtrack"
cd "$work/mmtrack"
"$python" -m venv "$work/venv"
mkdir "$work/home"

# A user's machine: no CI flag, no test database, a HOME of its own; Chromium and PostgreSQL are used
# only if this machine has them (their tests skip in one line otherwise).
quick_start() {
    env -u CI -u MMTRACK_TEST_PG -u MMTRACK_DB -u PYTHONPATH HOME="$work/home" PATH="$work/venv/bin:$PATH" \
        VIRTUAL_ENV="$work/venv" bash -euo pipefail -c "$1"
}
# The two commands are read from the README's quick start, so the check follows the README.
mapfile -t commands < <(awk '/^## Quick start/{q=1} q&&/^```bash/{f=1;next} f&&/^```/{exit} f' README.md)
[ "${#commands[@]}" -eq 2 ] || { echo "fresh clone check: expected two commands in the README's quick start" >&2; exit 2; }
for i in 0 1; do
    echo "fresh clone check: \$ ${commands[$i]}"
    start=$(date +%s)
    if ! quick_start "${commands[$i]}" > "$work/out$i.log" 2>&1; then
        # The end of the log (which tests failed), then the end of pytest's first failure (what it asserted):
        # last, so that a CI summary that keeps only the last lines still shows why.
        grep -v '^SKIPPED' "$work/out$i.log" | tail -n 25 >&2
        awk '/^___+ .* ___+$/ { n++ } n == 1 && !/^=+ short test summary/ { print } /^=+ short test summary/ { exit }' \
            "$work/out$i.log" | tail -n 30 >&2
        echo "fresh clone check: FAILED: ${commands[$i]}" >&2
        exit 1
    fi
    tail -n 3 "$work/out$i.log"
    echo "fresh clone check: ok in $(( $(date +%s) - start )) s"
done
