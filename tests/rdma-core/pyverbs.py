#!/usr/bin/env python3
"""rdma-core's own test suite (pyverbs, package python3-pyverbs) on the mlx5 model.

Runs each test file of /usr/share/doc/rdma-core/tests with Debian's interpreter, as rdma-core's
run_tests.py does, with the preload library that makes the model device mlx5_0, and prints
passed / failed / errors / skipped per file. No test is edited: the files are copied (some are
gzipped) and run as they are; this script only chooses the files and the device.

Exit status: 0 when no file has a failure or an error, 1 otherwise.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time

SUITE = "/usr/share/doc/rdma-core/tests"
# The generic files the issue names first, then every other generic file (not the CUDA and EFA
# ones, which need hardware the model is not; the mlx5-specific ones are reported apart).
CORE = ["test_device", "test_pd", "test_mr", "test_cq", "test_cq_events", "test_cqex",
        "test_qp", "test_qpex", "test_addr", "test_atomic"]


def prepare(dest):
    """A copy of the suite with the gzipped files unpacked, as a package `tests` under dest."""
    pkg = os.path.join(dest, "tests")
    if os.path.isdir(pkg):
        shutil.rmtree(pkg)
    shutil.copytree(SUITE, pkg)
    for name in os.listdir(pkg):
        if name.endswith(".gz"):
            path = os.path.join(pkg, name)
            with gzip.open(path, "rb") as src, open(path[:-3], "wb") as out:
                shutil.copyfileobj(src, out)
            os.remove(path)
    return pkg


def files(pkg):
    names = sorted(n[:-3] for n in os.listdir(pkg) if n.startswith("test_") and n.endswith(".py"))
    generic = [n for n in names if not re.search(r"mlx5|efa|cuda", n)]
    rest = [n for n in generic if n not in CORE]
    mlx5 = [n for n in names if "mlx5" in n]
    return [n for n in CORE if n in names] + rest, mlx5


def run(dest, lib, dev, name, timeout):
    env = dict(os.environ, LD_PRELOAD=lib, UVERBS_PRELOAD_QUIET="1")
    t0 = time.monotonic()
    try:
        p = subprocess.run(["/usr/bin/python3", "tests/run_tests.py", "--dev", dev, "-v", name],
                           cwd=dest, env=env, capture_output=True, text=True, timeout=timeout)
        out, code = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return {"file": name, "error": f"timed out after {timeout} s", "failed": 0, "errors": 1,
                "skipped": 0, "passed": 0, "ran": 0, "seconds": timeout, "log": out[-4000:]}
    ran = re.search(r"^Ran (\d+) tests?", out, re.M)
    status = re.search(r"^(OK|FAILED)(?: \((.*)\))?$", out, re.M)
    counts = {"failures": 0, "errors": 0, "skipped": 0, "expected failures": 0}
    if status and status.group(2):
        for part in status.group(2).split(","):
            k, _, v = part.strip().partition("=")
            counts[k.replace("_", " ")] = int(v)
    r = {"file": name, "ran": int(ran.group(1)) if ran else 0,
         "failed": counts["failures"], "errors": counts["errors"], "skipped": counts["skipped"],
         "seconds": round(time.monotonic() - t0, 1)}
    if not ran or not status:
        r["errors"] = max(r["errors"], 1)
        r["error"] = f"no unittest summary (exit status {code})"
    r["passed"] = r["ran"] - r["failed"] - r["errors"] - r["skipped"]
    r["skips"] = sorted(set(re.findall(r"\.\.\. skipped '(.*)'$", out, re.M)))
    if r["failed"] or r["errors"]:
        r["log"] = out[-4000:]
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="the preload library")
    ap.add_argument("--dev", default="mlx5_0")
    ap.add_argument("--dir", default="target/rdma-core", help="where the suite is copied")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per file")
    ap.add_argument("--mlx5", action="store_true", help="also run the mlx5-specific files (reported, never fatal)")
    ap.add_argument("names", nargs="*", help="only these files")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    pkg = prepare(os.path.abspath(args.dir))
    generic, mlx5 = files(pkg)
    chosen = args.names or generic
    results = [run(os.path.abspath(args.dir), os.path.abspath(args.lib), args.dev, n, args.timeout)
               for n in chosen]
    extra = [run(os.path.abspath(args.dir), os.path.abspath(args.lib), args.dev, n, args.timeout)
             for n in mlx5] if args.mlx5 and not args.names else []
    print(f"{'file':26} {'tests':>5} {'passed':>6} {'failed':>6} {'errors':>6} {'skipped':>7} {'s':>5}")
    for r in results + extra:
        tag = "  (mlx5-specific)" if r in extra else ""
        print(f"{r['file']:26} {r['ran']:5} {r['passed']:6} {r['failed']:6} {r['errors']:6} "
              f"{r['skipped']:7} {r['seconds']:5}{tag}")
    tot = {k: sum(r[k] for r in results) for k in ("ran", "passed", "failed", "errors", "skipped")}
    print(f"{'total (generic)':26} {tot['ran']:5} {tot['passed']:6} {tot['failed']:6} "
          f"{tot['errors']:6} {tot['skipped']:7}")
    skips = {}
    for r in results:
        for s in r.get("skips", []):
            skips.setdefault(s, []).append(r["file"])
    if skips:
        print("\nwhy tests were skipped:")
        for s, fs in sorted(skips.items()):
            print(f"  {s}  [{', '.join(fs)}]")
    bad = [r for r in results if r["failed"] or r["errors"]]
    for r in bad:
        print(f"\n--- {r['file']}: {r.get('error', '')}\n{r.get('log', '')}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"generic": results, "mlx5": extra, "total": tot}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
