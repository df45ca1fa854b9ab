#!/usr/bin/env python3
"""Training over several GPUs of one machine (`n_gpus`): the same data and parameters on 1, 2, 4 and 8
GPUs (those the machine has), the model files compared byte for byte.

usage: multi_gpu.py PATH/TO/boost [ROWS (default 10000000)] [ROUNDS (default 50)] [MAX_DEPTH (default 8)]
                    [GPU COUNTS, e.g. 1,2,4 (default: 1, 2, 4, 8 up to the machine's)] [NAME=VALUE ...]

The data is `boost generate`'s (28 standard-normal features, 5% missing in 4 columns, a noisy
nonlinear binary target), made in the first GPU's memory by `boost train synthetic:ROWS` (no file).
Each run is `boost train synthetic:ROWS ... device=cuda n_gpus=N verbosity=2`, timed by the library
(`N trees in S s`: the whole training, the devices' setup included) and by its phases: the rounds
are every phase but the setup (the cuts, the quantised matrices, NCCL's set-up, the first margins),
and the time per round and the scaling efficiency are of the rounds. Peak memory
per GPU is sampled with `nvidia-smi` every 50 ms during the run, less what each GPU held before.
The table gives time per round, speed-up over one GPU and scaling efficiency (speed-up / N).
"""
import re
import subprocess
import sys
import tempfile
import threading

boost = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 50
depth = sys.argv[4] if len(sys.argv) > 4 else "8"
extra = [a for a in sys.argv[6:] if "=" in a]


def memory_used():
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         check=True, capture_output=True, text=True).stdout
    return [int(line) for line in out.split()]


available = len(memory_used())
SETUP = {"data checks", "device open", "communicator: host", "communicator: nccl", "communicator: peer access", "cuts", "matrix for the tree builder",
         "base score and initial margins", "labels and margins to the device", "evaluation sets to the device"}
counts = [int(c) for c in sys.argv[5].split(",")] if len(sys.argv) > 5 and sys.argv[5] else [1, 2, 4, 8]
counts = [c for c in counts if c <= available]


class Sampler(threading.Thread):
    """The most memory each GPU used while running, less what it used before."""

    def __init__(self):
        super().__init__(daemon=True)
        self.before = memory_used()
        self.peak = list(self.before)
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(0.05):
            self.peak = [max(p, u) for p, u in zip(self.peak, memory_used())]

    def stop(self):
        self.done.set()
        self.join()
        return [p - b for p, b in zip(self.peak, self.before)]


with tempfile.TemporaryDirectory() as tmp:
    data = f"synthetic:{rows}"
    results = []
    for n in counts:
        model = f"{tmp}/model{n}.json"
        sampler = Sampler()
        sampler.start()
        run = subprocess.run(
            [boost, "train", data, "--rounds", str(rounds), "--verbose-eval", str(rounds), "-o", model,
             "objective=binary:logistic", f"max_depth={depth}", "eta=0.1", "device=cuda", f"n_gpus={n}",
             "verbosity=2", *extra],
            check=True, capture_output=True, text=True)
        peak = sampler.stop()
        total = float(re.search(r"trees in ([0-9.]+) s", run.stderr).group(1))
        phases = re.search(r"phases: (.*)", run.stderr).group(1)
        # The rounds: every top-level phase but the setup (the `tree: ...` steps are within `trees`).
        named = [(m.group(1), float(m.group(2))) for m in re.finditer(r"([a-z][a-z :]*?) ([0-9.]+) s", phases)]
        seconds = sum(t for name, t in named if not name.startswith("tree:") and name not in SETUP)
        library_peak = re.search(r"peak device memory (.*) MiB", run.stderr)
        print(f"n_gpus={n}: {total:.3f} s in all, rounds {seconds:.3f} s; peak MiB (library) "
              f"{library_peak.group(1) if library_peak else '?'}; phases: {phases}", flush=True)
        results.append((n, seconds, total, peak[:n], open(model, "rb").read()))
    same = all(r[4] == results[0][4] for r in results)
    print(f"\n{rows} rows x 28, depth {depth}, {rounds} rounds; model files byte-identical: {same}")
    print("| GPUs | whole run | rounds | per round | speed-up | efficiency | peak MiB per GPU (nvidia-smi) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    base = results[0][1] * results[0][0]
    for n, seconds, total, peak, _ in results:
        speedup = base / seconds
        print(f"| {n} | {total:.2f} s | {seconds:.3f} s | {1000 * seconds / rounds:.1f} ms | {speedup:.2f}x | "
              f"{speedup / n:.2f} | {', '.join(str(p) for p in peak)} |")
    sys.exit(0 if same else 1)
