#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
L=/tmp/plogs; rm -rf $L; mkdir -p $L
timeout 200 python3 benchmarks/bench_triton.py --no-triton-consan --profile --only matmul_s3_w8,matmul_s2_w4,layer_norm_bwd,attn_fwd > $L/tprof.log 2>&1
timeout 150 python3 benchmarks/breakdown_async.py --profile > $L/aprof.log 2>&1
timeout 100 python3 benchmarks/bench_triton.py --no-triton-consan --repeats 20 --only vector_add,softmax,layer_norm_fwd > $L/vadd.log 2>&1
tar czf $OUT/plogs.tgz -C /tmp plogs
grep -v "^\[" $L/tprof.log | tail -60; echo ====; grep -v "^\[" $L/aprof.log | tail -60; echo ===; tail -8 $L/vadd.log
