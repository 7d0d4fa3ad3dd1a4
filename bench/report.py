#!/usr/bin/env python3
"""Prints the benchmark tables of scripts/bench.sh from Google Benchmark JSON files.

    report.py HOST_OPS.json WORKLOADS.json ABI.json

Every figure is a ratio measured in the same run (op / memcpy of its bytes, ABI / C++ call,
update / rebuild), so the tables compare like with like on whatever machine ran them. Only the
standard library: it runs with the system python3.
"""
import json
import sys

SCALE = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(path):
    data = json.load(open(path))
    return data["context"], {b["name"]: b for b in data["benchmarks"]}


def ns(run):
    """Nanoseconds per iteration of one benchmark run."""
    return run["real_time"] * SCALE[run["time_unit"]]


def ops(runs):
    print("\nops vs memcpy of their output bytes (memcpy timed in the same run)")
    print(f"  {'op':<44} {'out bytes':>10} {'op ns':>10} {'memcpy ns':>10} {'ratio':>6}")
    for args in ["256/4096", "1024/4096", "1024/32768"]:
        op, mc = runs.get(f"BM_paged_kv_metadata/{args}"), runs.get(f"BM_memcpy_same_bytes/{args}")
        if op and mc:
            print(f"  {'paged KV indptr+indices+last_page_len ' + args:<44} {int(op['out_bytes']):>10} "
                  f"{ns(op):>10.0f} {ns(mc):>10.0f} {ns(op) / ns(mc):>6.2f}")
    for args, what in [("256/0", "256 mixed"), ("1024/0", "1024 mixed"), ("256/32767", "256 x 32k decodes")]:
        op = runs.get(f"BM_local_attention_virtual_batches/{args}")
        if op:
            print(f"  {'local attention (chunk 8192) ' + what:<44} {int(op['out_bytes']):>10} "
                  f"{ns(op):>10.0f} {op['memcpy_ns']:>10.0f} {ns(op) / op['memcpy_ns']:>6.2f}")
    print("\nper-request cost at growing batch sizes (ns per request; flat = linear)")
    for op in ["BM_split_decodes_and_prefills", "BM_reorder_batch", "BM_slot_mapping",
               "BM_local_attention_virtual_batches"]:
        sizes = [s for s in ("256", "1024", "4096") if f"{op}/{s}" in runs or f"{op}/{s}/0" in runs]
        if not sizes:
            continue
        per = [ns(runs.get(f"{op}/{s}") or runs[f"{op}/{s}/0"]) / int(s) for s in sizes]
        row = "  ".join(f"{s}: {p:7.1f}" for s, p in zip(sizes, per))
        print(f"  {op[3:]:<36} {row}   (ratio {sizes[-1]}/{sizes[0]}: {per[-1] / per[0]:.2f})")
    print("\nKV-sharing fast prefill (ns per call; all decodes = vLLM's pass-through, issue 35)")
    for args, what in [("256/0", "256 decodes"), ("1024/0", "1024 decodes"), ("256/1", "256 armed")]:
        v1, ex = runs.get(f"BM_fast_prefill/{args}"), runs.get(f"BM_fast_prefill_ex/{args}")
        if v1 and ex and "error_occurred" not in ex:
            print(f"  {what:<16} 1.0 function + destroy {ns(v1):>9.0f}   _ex (1.7) {ns(ex):>9.1f}")


def workloads(runs):
    print("\nattn_build per workload and backend, host path: us per build, bytes it produces "
          "(tensors not viewing the inputs), and build / memcpy of those bytes")
    names = {}
    for name, run in runs.items():
        workload, backend = name.split("/", 1)
        names.setdefault(workload, []).append((backend, run))
    for workload, rows in names.items():
        print(f"  {workload}")
        fa = next((ns(r) for b, r in rows if b == "FLASH_ATTN" and "error_occurred" not in r), None)
        for backend, run in rows:
            if run.get("error_occurred"):
                print(f"    {backend:<16} {run.get('error_message', 'error')}")
                continue
            t, mc, size = ns(run), run["memcpy_ns"], int(run["out_bytes"])
            vs_fa = f"{t / fa:7.2f}x FLASH_ATTN" if fa else ""
            # below 64 KiB a build is its fixed cost (validation, field views), not bandwidth
            vs_mc = f"{t / mc:7.2f}x memcpy" if size >= 65536 and mc else "  (fixed cost) "
            print(f"    {backend:<16} {t / 1e3:9.2f} us {size:>10} B   {vs_mc}  {vs_fa}")


def abi(runs):
    print("\nthe C ABI's own cost (ns per call): C++ call, attn_build linked, attn_build via dlsym")
    for what, key in [("FLASH_ATTN build, 1 request", "build/1/100"),
                      ("FLASH_ATTN build, 256 decodes x 4k", "build/256/4096")]:
        cxx, lin, dl = (runs.get(f"BM_{k}_{key}") for k in ("cxx", "abi", "dlsym"))
        if cxx and lin and dl:
            print(f"  {what:<36} C++ {ns(cxx):7.1f}  ABI {ns(lin):7.1f} (+{ns(lin) - ns(cxx):5.1f})  "
                  f"dlsym {ns(dl):7.1f} (+{ns(dl) - ns(cxx):5.1f})")
    cxx, lin, dl = (runs.get(f"BM_{k}_query") for k in ("cxx", "abi", "dlsym"))
    if cxx and lin and dl:
        print(f"  {'a query (reorder threshold)':<36} C++ {ns(cxx):7.1f}  ABI {ns(lin):7.1f} "
              f"(+{ns(lin) - ns(cxx):5.1f})  dlsym {ns(dl):7.1f} (+{ns(dl) - ns(cxx):5.1f})")
    print("\nupdate_block_table on a kept metadata vs a rebuild with the new table (FLASH_ATTN)")
    for args in ["256/4096", "1024/32767"]:
        up, re = runs.get(f"BM_update_block_table/{args}"), runs.get(f"BM_rebuild_new_table/{args}")
        if up and re:
            print(f"  {args:>12}: update {ns(up):8.0f} ns, rebuild {ns(re):8.0f} ns, "
                  f"update / rebuild {ns(up) / ns(re):5.2f}")


def main():
    ctx, host = load(sys.argv[1])
    print(f"machine: {ctx.get('host_name', '?')}, {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz")
    ops(host)
    workloads(load(sys.argv[2])[1])
    abi(load(sys.argv[3])[1])


if __name__ == "__main__":
    main()
