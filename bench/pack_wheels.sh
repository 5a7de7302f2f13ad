#!/usr/bin/env bash
# CuTe DSL's and TileLang's packages for the lent GPU machine, whose image lacks them, packed to
# cross in two transfers (a transfer carries 64 MiB with the working tree; the wheels are 180 MB):
# each wheel unpacked and recompressed with xz (92 -> 64 MB for the CUDA 13 CuTe DSL libraries),
# the three archives put in one tar, split in halves into .wa/ and .wb/ (git-ignored).
# apache-tvm-ffi is pinned to 0.1.12: with 0.1.15.post2 every TileLang 0.1.15 kernel failed to
# load on the H200 ("'tl.SwizzleMode' has no enum at string index 'NONE'").
#
#   bash bench/pack_wheels.sh                 # here, once (needs pip's index; about 5 minutes)
#   call 1: mkdir -p /tmp/wheels && cp .wa/* /tmp/wheels/            (carry .wa)
#   call 2: cp .wb/* /tmp/wheels/ && bash bench/unpack_wheels.sh     (carry .wb; same warm machine)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$work/whl" \
  tilelang==0.1.15 apache-tvm-ffi==0.1.12 torch-c-dlpack-ext==0.1.5 z3-solver==4.15.4.0 \
  nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 \
  nvidia-cutlass-dsl-libs-cu13==4.8.1
pack() {  # pack NAME WHEEL... : the wheels' contents (site-packages layout) as NAME.tar.xz
  local name=$1; shift
  mkdir -p "$work/$name"
  for w in "$@"; do unzip -q -o "$w" -d "$work/$name"; done
  tar cf - -C "$work/$name" . | xz -9 -T0 > "$work/$name.tar.xz"
}
pack cu13 "$work"/whl/nvidia_cutlass_dsl_libs_cu13-*.whl
pack tl "$work"/whl/tilelang-*.whl
pack rest "$work"/whl/apache_tvm_ffi-*.whl "$work"/whl/torch_c_dlpack_ext-*.whl "$work"/whl/z3_solver-*.whl \
  "$work"/whl/nvidia_cutlass_dsl-*.whl "$work"/whl/nvidia_cutlass_dsl_libs_base-*.whl \
  "$work"/whl/nvidia_cutlass_dsl_libs_core-*.whl
tar cf "$work/pkgs.tar" -C "$work" cu13.tar.xz tl.tar.xz rest.tar.xz
rm -rf .wa .wb && mkdir .wa .wb
split -n 2 -d "$work/pkgs.tar" "$work/pkgs.part."
mv "$work/pkgs.part.00" .wa/ && mv "$work/pkgs.part.01" .wb/
sha256sum "$work/pkgs.tar" | cut -c1-16 > .wb/pkgs.sha
for d in .wa .wb; do grep -qx "/$d/" .git/info/exclude || echo "/$d/" >> .git/info/exclude; done
rm -rf "$work"
du -sb .wa .wb
