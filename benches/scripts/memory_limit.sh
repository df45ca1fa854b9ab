#!/usr/bin/env bash
# Peak device memory (nvidia-smi) and time of `boost train` at 10M x 28, depth 8, 500 rounds, under limits.
boost=$1; rows=${2:-10000000}; shift 2
tmp=$(mktemp -d); "$boost" generate $tmp/train.csv --rows $rows >/dev/null
base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0)
for limit in "$@"; do
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 20 > $tmp/poll & poll=$!
  extra=(); [[ $limit != none ]] && extra=(device_memory_limit=$limit)
  out=$("$boost" train $tmp/train.csv --rounds 500 --verbose-eval 500 -o $tmp/m.json objective=binary:logistic max_depth=8 eta=0.1 device=cuda verbosity=2 "${extra[@]}" 2>&1)
  kill $poll; peak=$(sort -n $tmp/poll | tail -1)
  echo "=== limit $limit: nvidia-smi peak $((peak - base)) MiB (before: $base)"
  echo "$out" | grep -E "trees in|peak|error|phases|limit" | cut -c1-600
done
rm -rf $tmp
