#!/bin/sh
# Build the simdjson harness against Debian's libsimdjson-dev (apt-get install -y
# libsimdjson-dev g++): benches/simdjson/build.sh [OUT]  (default: target/simdjson_lines).
# Exits non-zero, with a message, when the header or the compiler is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${CARGO_TARGET_DIR:-$here/../../target}/simdjson_lines}
command -v g++ >/dev/null 2>&1 || { echo "build.sh: no g++ (apt-get install -y g++)" >&2; exit 1; }
[ -f /usr/include/simdjson.h ] || { echo "build.sh: no simdjson.h (apt-get install -y libsimdjson-dev)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
# -O3 -march=native as simdjson recommends; the library picks its kernel at run time.
g++ -std=c++17 -O3 -march=native -DNDEBUG -o "$out" "$here/simdjson_lines.cpp" -lsimdjson
echo "$out"
