#!/usr/bin/env bash
# On the GPU machine: join the halves bench/pack_wheels.sh made (both in /tmp/wheels), check the
# sum, and unpack the packages into the image's own site-packages (the judge and the solution
# processes do not inherit PYTHONPATH).
set -euo pipefail
cd /tmp/wheels
cat pkgs.part.00 pkgs.part.01 > pkgs.tar
[ "$(sha256sum pkgs.tar | cut -c1-16)" = "$(cat pkgs.sha)" ] || { echo "pkgs.tar: checksum differs" >&2; exit 1; }
site=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
tar xf pkgs.tar
for a in cu13 tl rest; do xz -dc "$a.tar.xz" | tar xf - -C "$site"; done
rm -f pkgs.tar pkgs.part.0* ./*.tar.xz
python3 -c "import tilelang, cutlass; print('tilelang', tilelang.__version__, 'and cutlass import')"
