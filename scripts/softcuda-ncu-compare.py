#!/usr/bin/env python3
"""Nsight Compute's counters beside the software device's, launch by launch, same metric definitions.

    python3 scripts/softcuda-ncu-compare.py NCU_CSV SOFTCUDA_STATS_JSONL [--per N]

NCU_CSV: `ncu --csv --metrics ...` of a command; SOFTCUDA_STATS_JSONL: the same command under
scripts/with-softcuda.sh with SOFTCUDA_STATS=FILE (deterministic schedule). The k-th launch of a
kernel name in one is matched with the k-th in the other (ncu's --launch-count/--kernel-name
filters: compare only the launches it profiled). Metrics, where ncu has them:
  l1tex__data_pipe_lsu_wavefronts_mem_shared.sum        <-> shared_wavefronts
  l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum        <-> global_load_sectors (loads only)
  l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum        <-> global_sectors - global_load_sectors
  ..._op_red.sum + ..._op_atom.sum                      <-> global_atomic_sectors
  smsp__inst_executed.sum (SASS)                        <-> warp_instructions (PTX: another ISA)
--per N divides every count by N (e.g. interactions) in the printed table.
"""
import csv
import json
import sys
from collections import defaultdict

PAIRS = [
    ("shared wavefronts", ["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"], lambda s: s["shared_wavefronts"]),
    ("global load sectors", ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], lambda s: s["global_load_sectors"]),
    ("global store sectors", ["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"],
     lambda s: s["global_sectors"] - s["global_load_sectors"]),
    ("atomic/reduction sectors", ["l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
                                  "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum"],
     lambda s: s["global_atomic_sectors"]),
    ("warp instructions (SASS vs PTX)", ["smsp__inst_executed.sum"], lambda s: s["warp_instructions"]),
]


def number(v):
    return float(v.replace(",", "")) if v not in ("", "n/a") else None


def main():
    args = sys.argv[1:]
    per = 1.0
    if "--per" in args:
        i = args.index("--per")
        per = float(args[i + 1])
        del args[i:i + 2]
    ncu_path, soft_path = args
    ncu = defaultdict(dict)  # (kernel, k) -> metric -> value
    order = []
    seen = defaultdict(set)
    rows = [r for r in csv.reader(open(ncu_path)) if len(r) > 10]
    head = rows[0]
    for r in rows[1:]:
        m = dict(zip(head, r))
        key = (m["Kernel Name"], m["ID"])
        if m["ID"] not in seen[m["Kernel Name"]]:
            seen[m["Kernel Name"]].add(m["ID"])
            order.append(key)
        ncu[key][m["Metric Name"]] = number(m["Metric Value"])
    soft = defaultdict(list)
    for line in open(soft_path):
        j = json.loads(line)
        soft[j["kernel"]].append(j)
    nth = defaultdict(int)
    print("| kernel (launch) | metric | ncu | softcuda | softcuda / ncu |")
    print("| --- | --- | ---: | ---: | ---: |")
    for kernel, ident in order:
        k = nth[kernel]
        nth[kernel] += 1
        if k >= len(soft[kernel]):
            print(f"| `{kernel}` ({k}) | not launched on the software device | | | |")
            continue
        s = soft[kernel][k]
        for label, metrics, get in PAIRS:
            vals = [ncu[(kernel, ident)].get(mt) for mt in metrics]
            if any(v is None for v in vals):
                continue
            a, b = sum(vals), get(s)
            ratio = f"{b / a:.4f}" if a else ("=" if b == 0 else "inf")
            fmt = (lambda x: f"{x:,.0f}") if per == 1.0 else (lambda x: f"{x:.6g}")
            print(f"| `{kernel}` ({k}) | {label} | {fmt(a / per)} | {fmt(b / per)} | {ratio} |")


if __name__ == "__main__":
    main()
