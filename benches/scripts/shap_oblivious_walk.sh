#!/usr/bin/env bash
# SHAP values of a model of oblivious trees on the GPU: the walk over each tree against the generic
# paths (the same model with one node's threshold moved up a float, see `benches/src/bin/shap.rs`).
# Needs no Python package: `boost train` makes the model from `boost generate`'s rows (1M, seed 0),
# which explains others (seed 1).
#
# usage: shap_oblivious_walk.sh DIR_OF_BOOST_AND_SHAP [ROWS (1000000)] [ROUNDS (500)] [DEPTH (8)]
#                               [INTERACTION_ROWS (100000)]
set -euo pipefail
bin=$1 rows=${2:-1000000} rounds=${3:-500} depth=${4:-8} interaction_rows=${5:-100000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/boost" generate --rows "$rows" --seed 1 --raw "$work/rows.f32"
"$bin/boost" train synthetic:${TRAIN_ROWS:-1000000} -o "$work/model.json" objective=binary:logistic max_depth="$depth" eta=0.1 \
    grow_policy=oblivious --rounds "$rounds" device="${DEVICE:-cuda}"
# The raw table holds the label first: keep the 28 features of each row.
python3 - "$work/rows.f32" "$work/values.f32" <<'PY'
import array, sys
table = array.array("f")
with open(sys.argv[1], "rb") as f:
    table.frombytes(f.read())
values = array.array("f")
for r in range(len(table) // 29):
    values.extend(table[r * 29 + 1:(r + 1) * 29])
with open(sys.argv[2], "wb") as f:
    values.tofile(f)
PY
"$bin/shap" "$work/model.json" "$work/values.f32" 28 "$rows" "$interaction_rows" 2000 "$work/out" paths
