#!/usr/bin/env bash
# CPU external memory against in-core: `boost train` on one generated CSV file, whole, as pages in
# host memory and as pages in a cache file; the model files must be the same. Optional second binary
# (an older build) times the in-core run before the change. Peak host memory from /usr/bin/time.
boost=$1; rows=${2:-2000000}; rounds=${3:-100}; old=${4:-}
tmp=$(mktemp -d); "$boost" generate $tmp/train.csv --rows $rows >/dev/null
params=(objective=binary:logistic max_depth=8 eta=0.1 device=cpu verbosity=2 --rounds $rounds --verbose-eval 0)
run() { # name binary args...
  local name=$1 bin=$2; shift 2
  /usr/bin/time -f "%M KB peak RSS" "$bin" train $tmp/train.csv "${params[@]}" -o $tmp/$name.json "$@" 2> $tmp/$name.err
  echo "=== $name: $(grep -E 'trees in' $tmp/$name.err | cut -c1-200) | $(grep 'peak RSS' $tmp/$name.err) | $(grep -E 'pages,' $tmp/$name.err)"
  grep -oE "(trees|tree: histograms|tree: partitions) [0-9.]+ s" $tmp/$name.err | tr "\n" ";"; echo
  grep -iE "error" $tmp/$name.err | head -3
}
[[ -n $old ]] && run before $old
run in-core "$boost"
run pages-host "$boost" --external-memory
run pages-disk "$boost" --external-memory --cache-dir $tmp
for m in pages-host pages-disk; do cmp -s $tmp/in-core.json $tmp/$m.json && echo "$m: same model file" || echo "$m: MODEL DIFFERS"; done
[[ -n $old ]] && { cmp -s $tmp/in-core.json $tmp/before.json && echo "before: same model file" || echo "before: MODEL DIFFERS"; }
rm -rf $tmp
