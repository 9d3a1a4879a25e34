#!/usr/bin/env bash
# One command from a fresh checkout to generated text, offline: installs the Debian build
# dependencies if any are missing (needs root or sudo), builds the inlay tool in Release
# and generates with the default model that ships in models/ (a 1M-parameter Llama
# trained on Debian's fortune cookies; see tools/train/README.md).
#   scripts/quickstart.sh                   a fortune that starts with "You will"
#   scripts/quickstart.sh "PROMPT" [inlay generate options...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DINLAY_BENCH=OFF > /dev/null
cmake --build build -j"$(nproc)" --target inlay_cli
prompt="${1:-You will}"
shift || true
# inlay generate prints only the continuation: show the prompt in front of it (not in
# front of --json output).
case " $* " in *" --json "*) ;; *) printf '%s' "$prompt" ;; esac
exec build/tools/inlay generate -m models/default-q8_0.gguf -p "$prompt" -n 96 --temp 0.7 --seed 42 "$@"
