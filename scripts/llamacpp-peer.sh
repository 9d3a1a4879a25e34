#!/usr/bin/env bash
# Prepares llama.cpp as the tests' reference, without building llama.cpp:
#   scripts/llamacpp-peer.sh PEER_DIR DEST_DIR
# PEER_DIR is a llamacpp-peer folder (../shared/tools/llamacpp-peer: package.json,
# package-lock.json and .npmrc pinning node-llama-cpp 3.21.1); it stays read-only. Into
# DEST_DIR (in the build tree) this installs those npm packages (`npm ci`, no install
# scripts, no optional packages), whose @node-llama-cpp/linux-x64 ships llama.cpp's
# prebuilt CPU libraries, and takes from the llama.cpp source bundled in node-llama-cpp
# (llama/gitRelease.bundle) the C headers and the vocabulary files of models/ that the
# tests read. Results:
#   DEST_DIR/lib      the prebuilt libllama, libggml*, libggml-cpu-<variant>.so
#   DEST_DIR/include  llama.h, ggml*.h, gguf.h
#   DEST_DIR/models   ggml-vocab-*.gguf with their .inp/.out test vectors
# tools/llamacpp/CMakeLists.txt runs it at configure time and builds the tools the tests
# run against these. Idempotent: a second run with the same lock file does nothing.
# Exits non-zero with a message when something is missing (no npm, no registry).
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: $0 PEER_DIR DEST_DIR" >&2; exit 2; fi
[ -d "$1" ] || { echo "llamacpp-peer: $1 is absent (set INLAY_LLAMACPP_DIR or INLAY_SHARED_DIR)" >&2; exit 1; }
peer=$(cd "$1" && pwd)
mkdir -p "$2"
dest=$(cd "$2" && pwd)
for f in package.json package-lock.json .npmrc; do
  [ -f "$peer/$f" ] || { echo "llamacpp-peer: $peer/$f is absent" >&2; exit 1; }
done
for tool in npm git; do
  command -v "$tool" > /dev/null || { echo "llamacpp-peer: $tool is not installed" >&2; exit 1; }
done
stamp="$dest/.prepared"
lock_sum=$(cat "$peer/package.json" "$peer/package-lock.json" "$peer/.npmrc" | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sum" ]; then
  echo "llamacpp-peer: $dest is ready"
  exit 0
fi
rm -f "$stamp"
start=$SECONDS
npm_dir="$dest/npm"
mkdir -p "$npm_dir"
for f in package.json package-lock.json .npmrc; do
  cp "$peer/$f" "$npm_dir/$f"
  chmod u+w "$npm_dir/$f"
done
# ignore-scripts: node-llama-cpp's postinstall would download or compile llama.cpp.
(cd "$npm_dir" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --ignore-scripts --omit=optional --no-audit --no-fund \
  --loglevel=error > npm.log 2>&1) || { echo "llamacpp-peer: npm ci failed in $npm_dir:" >&2; tail -20 "$npm_dir/npm.log" >&2; exit 1; }
libs="$npm_dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
bundle="$npm_dir/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[ -f "$libs/libllama.v0.4.0.so" ] || { echo "llamacpp-peer: no libllama in $libs" >&2; exit 1; }
[ -f "$bundle" ] || { echo "llamacpp-peer: $bundle is absent" >&2; exit 1; }

# The headers and vocabularies of the commit the libraries were built from.
git_dir="$dest/llama.cpp.git"
rm -rf "$git_dir" "$dest/include" "$dest/models" "$dest/src"
git init -q --bare "$git_dir"
git -C "$git_dir" fetch -q "$bundle" "+HEAD:refs/heads/release"
mkdir -p "$dest/src"
vocabs=()
for v in llama-spm phi-3 gpt-2 llama-bpe qwen2; do
  vocabs+=("models/ggml-vocab-$v.gguf" "models/ggml-vocab-$v.gguf.inp" "models/ggml-vocab-$v.gguf.out")
done
git -C "$git_dir" archive release include ggml/include "${vocabs[@]}" | tar -x -C "$dest/src"
mkdir -p "$dest/include"
cp "$dest/src/include/"*.h "$dest/src/ggml/include/"*.h "$dest/include/"
mv "$dest/src/models" "$dest/models"
rm -rf "$dest/src" "$git_dir"
ln -sfn "$libs" "$dest/lib"
echo "$lock_sum" > "$stamp"
echo "llamacpp-peer: prepared $dest in $((SECONDS - start)) s"
