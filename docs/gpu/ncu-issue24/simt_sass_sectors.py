#!/usr/bin/env python3
# Global load sectors of nbody_simt_accel (issue 24 item 4): the PTX's loop shape (what
# softcuda runs, warps in lockstep) against the SASS's (ptxas 13.5 -arch sm_90 re-unrolls
# the PTX's one-at-a-time remainder loops by 4, then 2, then 1: SASS 0x08a0-0x1270 and
# 0x1b80-0x2550). Both run the j < i loop (unrolled by 8, one broadcast body a load) and
# the j > i loop (unrolled by 8, lane l at body i_l + 1 + ...); lanes share a load
# instruction when they are at the same site and pass; an instruction costs the distinct
# 32-byte sectors of the 16-byte bodies its active lanes load.
#   python3 docs/gpu/ncu-issue24/simt_sass_sectors.py [N]   (default 4096)
# N = 4096: PTX shape 4,588,544 (softcuda's count), SASS shape 4,590,848 (ncu's, H200),
# 18 a warp; N = 16,384: 73,404,416 and 73,413,632 (ncu's in run 1).
import sys
N = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
def sectors(bodies): return len({(16 * j) // 32 for j in bodies})

def remainder_ptx(starts, rems):
    # one load per iteration r, lanes with rem > r
    tot = 0
    for r in range(max(rems, default=0)):
        act = [s + r for s, m in zip(starts, rems) if m > r]
        if act: tot += sectors(act)
    return tot

def remainder_sass(starts, rems):
    # 0x970 block never runs (rem > 0); 4-loop while rem > 3; 2-block if rem > 1; 1-loop.
    tot = 0
    pos = list(starts); rem = list(rems)
    it = 0
    while True:
        act = [l for l in range(len(pos)) if rem[l] > 3]
        if not act: break
        for u in range(4): tot += sectors([pos[l] + u for l in act])
        for l in act: pos[l] += 4; rem[l] -= 4
    act = [l for l in range(len(pos)) if rem[l] > 1]
    if act:
        for u in range(2): tot += sectors([pos[l] + u for l in act])
        for l in act: pos[l] += 2; rem[l] -= 2
    while True:
        act = [l for l in range(len(pos)) if rem[l] > 0]
        if not act: break
        tot += sectors([pos[l] for l in act])
        for l in act: pos[l] += 1; rem[l] -= 1
    return tot

def warp(base, rem_model):
    lanes = [base + l for l in range(32) if base + l < N]
    tot = sectors(lanes)  # own body
    # phase A: j < i, unrolled by 8 at j = 8k (same for every lane)
    ua = [i // 8 for i in lanes]
    for k in range(max(ua)):
        if any(u > k for u in ua): tot += 8  # 8 loads of one broadcast body each
    tot += rem_model([8 * u for u in ua], [i % 8 for i in lanes])
    # phase B: j > i, unrolled by 8 from i+1
    ub = [(N - i - 1) // 8 for i in lanes]
    for k in range(max(ub)):
        act = [i for i, u in zip(lanes, ub) if u > k]
        for u in range(8): tot += sectors([i + 1 + 8 * k + u for i in act])
    tot += rem_model([i + 1 + 8 * u for i, u in zip(lanes, ub)], [(N - i - 1) % 8 for i in lanes])
    return tot

ptx = [warp(b, remainder_ptx) for b in range(0, N, 32)]
sass = [warp(b, remainder_sass) for b in range(0, N, 32)]
print("N", N, "warps", len(ptx), "PTX-shape sectors", sum(ptx), "SASS-shape", sum(sass),
      "difference", sum(sass) - sum(ptx), "per warp", {d for d in (s - p for s, p in zip(sass, ptx))})
