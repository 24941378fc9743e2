#!/usr/bin/env bash
# One GPU machine call's worth of verification, logs under $OUT (or ./device-out), the
# summary last. Run from the repository root, from source, with the machine's python3:
#
#   bash benchmarks/device_run.sh suite    # GPU test suite (pytest -m gpu) but Triton's
#   bash benchmarks/device_run.sh suite-triton  # the Triton front end and corpus GPU tests
#   bash benchmarks/device_run.sh suite-peer    # Triton's ConSan cases (tests/gpu/test_triton_peer.py)
#   bash benchmarks/device_run.sh bench    # bench_clean, bench_async (no racecheck), bench_unrolled
#   bash benchmarks/device_run.sh triton   # bench_triton (consan beside Triton's ConSan)
#   bash benchmarks/device_run.sh host     # the host's time per launch (bench_triton --host-profile)
#   bash benchmarks/device_run.sh launch   # an instrumented launch's host path and read-back
#   bash benchmarks/device_run.sh racecheck  # bench_async beside compute-sanitizer racecheck
#   bash benchmarks/device_run.sh build    # bench_build on this machine's CPU (no GPU used)
#   bash benchmarks/device_run.sh depth    # the clustered ring at 2-8 stages (depth_dsmem)
#
# Each stage fits one 10-minute command; the summary lines it prints at the end are what
# a note or benchmarks/RESULTS.md quotes (with the commit printed first).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-device-out}"
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
py=python3
summary=()

stage() {  # stage NAME TIMEOUT_S COMMAND...: run it, log it, keep its last line
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    summary+=("$name: rc $rc in $((SECONDS - t0)) s: $(grep -v '^\s*$' "$out/$name.log" | tail -1)")
}

echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
case "${1:-suite}" in
suite)  # (in SUITE_WORKERS pytest-xdist workers, 6 unless set; 1: one process. On the
    # H100, 2026-11-27: 471 passed in 168.7 s with 6 workers, 347.7 s in one process: the
    # suite's time is mostly its builds on the CPU, and device time is every session's limit)
    # A test whose kernel never returns is ended after 100 s where pytest-timeout is
    # installed (its worker is replaced and the rest still run; the failure names the
    # test): on the H100 one hung kernel took the stage's whole 560 s, naming nothing.
    # Failures are written as they happen (benchmarks/pytest_now.py).
    workers=${SUITE_WORKERS:-6}
    hang=()
    $py -c "import pytest_timeout" 2>/dev/null && hang=(--timeout 100 --timeout-method thread)
    stage gpu_suite 560 $py -m pytest -q -m gpu tests/ -p no:cacheprovider -rs \
        -p benchmarks.pytest_now --ignore-glob='tests/gpu/test_triton*.py' \
        --junitxml="$out/gpu_suite.xml" "${hang[@]}" \
        $([ "$workers" -gt 1 ] && echo "-n $workers --dist loadgroup")
    grep -E "^(FAILED|ERROR|SKIPPED)|^--- .* failed|crashed while running" "$out/gpu_suite.log" \
        | head -40
    ;;
suite-triton | suite-peer)  # (each case compiles a Triton kernel: stages of their own; a
    # case whose kernel never returns is killed after 45 s and the rest still run; on the
    # H100 the peer cases alone ran past 465 s once nine of them hung)
    # (--hang is wider for the front-end suite: its first test compiles every checker
    # variant on a fresh machine, 45 s was too little once)
    if [ "$1" = suite-peer ]; then files=(tests/gpu/test_triton_peer.py); name=gpu_suite_peer; hang=45
    else files=(tests/gpu/test_triton.py tests/gpu/test_triton_corpus.py); name=gpu_suite_triton; hang=150
    fi
    stage "$name" 560 $py benchmarks/pytest_guarded.py --hang "$hang" -- -m gpu "${files[@]}" \
        -rs --tb=short
    grep -E "^(FAILED|ERROR|SKIPPED)|HUNG" "$out/$name.log" | head -40
    ;;
bench)
    stage bench_clean 360 $py benchmarks/bench_clean.py --json "$out/bclean.json"
    stage bench_async 200 $py benchmarks/bench_async.py --no-racecheck --json "$out/basync.json"
    stage bench_unrolled 120 $py benchmarks/bench_unrolled.py --json "$out/bunrolled.json"
    for f in bench_clean bench_async bench_unrolled; do
        echo "== $f"; grep -v "^\[" "$out/$f.log" | tail -14
    done
    ;;
triton)
    stage bench_triton 560 $py benchmarks/bench_triton.py --json "$out/btriton.json"
    grep -v "^\[" "$out/bench_triton.log" | tail -30
    ;;
launch)  # the host's part of an instrumented launch beside CuPy's native one (bench_async's
    # kernels), then a clean launch's read-back step by step
    stage launch_host 300 $py benchmarks/launch_host.py
    grep -E "^##|^native|^consan|^Prepared|^tma|^Launcher" "$out/launch_host.log"
    stage readback_steps 120 $py benchmarks/readback_steps.py
    grep -v "^\[" "$out/readback_steps.log"
    ;;
host)  # where the host's time per launch goes on the small Triton kernels (stages, cProfile)
    stage host_profile 300 $py benchmarks/bench_triton.py --host-profile 200 \
        --only softmax,layer_norm_fwd
    grep -E "^\[| \| " "$out/host_profile.log" | head -24
    ;;
build)  # (the checker objects are built first, once, into a fresh cache: about a minute)
    stage bench_build 560 $py benchmarks/bench_build.py --top 4 --repeats 5 \
        --json "$out/bbuild.json"
    tail -8 "$out/bench_build.log"
    ;;
depth)
    stage depth_dsmem 300 $py benchmarks/depth_dsmem.py --json "$out/bdepth.json"
    tail -8 "$out/depth_dsmem.log"
    ;;
racecheck)
    stage bench_async_rc 560 $py benchmarks/bench_async.py --timeout 100 --json "$out/basync_rc.json"
    tail -12 "$out/bench_async_rc.log"
    ;;
*)
    echo "usage: $0 suite|suite-triton|suite-peer|bench|triton|host|launch|build|depth|racecheck" >&2
    exit 2
    ;;
esac
printf '%s\n' "${summary[@]}"
