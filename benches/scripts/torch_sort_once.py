#!/usr/bin/env python3
"""torch.sort of 2^LOG2 uniform random int32 keys (with their indices), twice: the peer's run to put
under a profiler next to `bandwidth sort-once LOG2` (ncu --launch-skip past the first sort).

usage: torch_sort_once.py LOG2
"""
import sys

import torch


def main():
    n = 1 << int(sys.argv[1])
    x = torch.randint(-2**31, 2**31 - 1, (n,), device="cuda", dtype=torch.int32)
    for _ in range(2):
        torch.sort(x)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
