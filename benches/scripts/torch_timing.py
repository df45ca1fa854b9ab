"""CUDA-event timing of a torch call, shared by the side-by-side scripts."""
import torch


def timed(fn, warmup=3, repeats=20):
    """Median microseconds of `repeats` calls of `fn` after `warmup` calls, each between two CUDA events."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1000.0)
    samples.sort()
    return samples[len(samples) // 2]
