#!/bin/bash
# `mmtrack publish` after one new commit, two codes side by side (docs/design/archive/publish.md, "One new commit, publish only").
#   benchmarks/publish_append_ab.sh BASE_SRC BASE_PREP NEW_SRC NEW_PREP [ROUNDS]
# *_SRC: a source tree put on PYTHONPATH (e.g. `git archive <sha> | tar -x -C dir`); *_PREP: a folder holding
# store.db and site/ as they stood after that code published the history and the new commit was imported
# and detected (each code's own site: the data format may differ). Each round copies each PREP afresh and
# runs `publish` (one new commit to carry on), then `publish` again (nothing new), alternating the codes.
# Prints: round code "new" wall user sys "nothing" wall user sys (from /usr/bin/time), and the load.
set -euo pipefail
base_src=$1 base_prep=$2 new_src=$3 new_prep=$4 rounds=${5:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { /usr/bin/time -f "%e %U %S" env PYTHONPATH="$1" python -m mmtrack publish -o "$work/w/site" \
          --db "sqlite:///$work/w/store.db" --title bench --no-progress 2>&1 >/dev/null | tail -1; }
for r in $(seq "$rounds"); do
  for code in base new; do
    if [ $code = base ]; then src=$base_src prep=$base_prep; else src=$new_src prep=$new_prep; fi
    rm -rf "$work/w"; cp -a "$prep" "$work/w"; sync
    cd "$work/w"  # python -m puts the working folder first on sys.path: never a checkout's root
    echo "$r $code new $(run "$src") nothing $(run "$src") load $(cut -d' ' -f1 /proc/loadavg)"
    cd /
  done
done
